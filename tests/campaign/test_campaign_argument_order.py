"""`campaign up` and `campaign run` check their stacks before they need anything else: a mistyped
stack is named as a typo (with the closest names) even when --results, the bucket and the Pulumi CLI
are all missing. The order lives in the library (analysis.campaign.commands), not in argparse."""

from __future__ import annotations

import pytest
from campaign_project import make_project

from analysis.campaign import commands
from payload.exitcodes import UsageError


def _no_backend(root):
    raise AssertionError("the backend (the Pulumi CLI) was looked for before the arguments were checked")


@pytest.fixture
def project(tmp_path):
    return make_project(tmp_path / "project", {"aws-g4dn-1x": {}, "gcp-t4-1x": {}}, tiny=False)


@pytest.mark.parametrize("operation", [commands.up, commands.run])
def test_a_mistyped_stack_is_named_before_the_missing_results(operation, project):
    with pytest.raises(UsageError) as caught:
        operation(["aws-g4dn-1xx"], results_url=None, work_dir=project, backend_factory=_no_backend)
    assert "aws-g4dn-1xx" in str(caught.value) and "aws-g4dn-1x" in str(caught.value)
    assert "--results" not in str(caught.value)


@pytest.mark.parametrize("operation", [commands.up, commands.run])
def test_a_glob_matching_nothing_is_named_before_the_missing_results(operation, project):
    with pytest.raises(UsageError, match=r"aws-zzz-\*"):
        operation(["aws-zzz-*"], results_url=None, work_dir=project, backend_factory=_no_backend)


@pytest.mark.parametrize("operation", [commands.up, commands.run])
def test_known_stacks_without_results_ask_for_results_before_the_backend(operation, project):
    with pytest.raises(ValueError, match=r"--results is required \(or set GPUBENCH_RESULTS\)") as caught:
        operation(["aws-*"], results_url="", work_dir=project, backend_factory=_no_backend)
    assert not isinstance(caught.value, UsageError)


def test_the_cli_wrapper_reaches_into_no_private_argparse_state():
    import inspect

    import analysis.campaign.cli as wrapper

    assert "_actions" not in inspect.getsource(wrapper)
