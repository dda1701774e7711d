"""The offline preview's mock answers are the same in every process: the rendered matrix is shared
between the suite's workers (tests/shared_once.py), and rendering twice must give identical inputs."""

from __future__ import annotations

from infra.aws import mocks


def _ami(filters: list[dict]) -> str:
    return mocks.call("aws:ec2/getAmi:getAmi", {"filters": filters})["id"]


def test_the_mock_ami_id_does_not_depend_on_the_filters_key_order():
    # a dict's key order is what differed between processes (the SDK hands filters over in hash order)
    one = [{"name": "name", "values": ["Deep Learning *"]}, {"name": "state", "values": ["available"]}]
    other = [{"values": ["Deep Learning *"], "name": "name"}, {"values": ["available"], "name": "state"}]
    assert _ami(one) == _ami(other)
    assert _ami(one) != _ami([{"name": "name", "values": ["Other *"]}])  # still told apart by what they ask
