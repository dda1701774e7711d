"""Candidates for `gpubench bench`, checked against the shipped catalog: each one is the cheapest matching
offering the catalog itself prices (computed here independently), retired offerings are passed over and
said so, stack names follow the matrix, and this machine and SSH hosts are priced the way the demo and the
SSH runner price them."""

from __future__ import annotations

import warnings
from datetime import date, datetime, timezone

import pytest
import yaml

from analysis.bench.candidates import (
    LOCAL_OFFERING,
    CandidateError,
    cloud_candidates,
    local_candidate,
    ssh_candidates,
)
from analysis.price.billed import cost_of
from infra import clouds
from infra.catalog import NoPrice, load_catalog
from infra.stacks import STACKS_DIR, load_config, ssh_stack_names
from payload.workloads.spec import parse_spec

TODAY = datetime.now(timezone.utc).date()


def task(tmp_path, **resources):
    doc = {"name": "job", "run": "python train.py"}
    if resources:
        doc["resources"] = resources
    return parse_spec(doc, tmp_path / "task.yaml")


def launchable(day=TODAY):
    return [
        o
        for o in load_catalog().offerings()
        if o.kind == "cloud" and clouds.is_cloud(o.provider) and not o.is_retired_on(day)
    ]


def cheapest(gpu: str, count: int, market: str, providers=None, regions=None) -> tuple[str, float]:
    """The cheapest priced offering with `count` x `gpu` on `market`, straight from the catalog."""
    catalog = load_catalog()
    priced = []
    for o in launchable():
        if o.gpu_model != gpu or o.gpu_count != count or market not in o.markets:
            continue
        if (providers and o.provider not in providers) or (regions and not set(regions) & set(o.regions)):
            continue
        try:
            priced.append((catalog.price(o.id, market=market).hourly_usd, o.id))
        except NoPrice:
            continue
    price, offering = min(priced)
    return offering, price


@pytest.mark.parametrize("market", ["on-demand", "spot"])
def test_each_alternative_gets_the_cheapest_catalog_offering(tmp_path, market):
    spec = task(tmp_path, accelerators=["T4", "L4:1", "A100:8"], spot=market == "spot")
    found, unmatched = cloud_candidates(spec)
    assert unmatched == [] and [c.ask for c in found] == ["T4:1", "L4:1", "A100:8"]
    catalog = load_catalog()
    for candidate in found:
        gpu, count = candidate.ask.split(":")
        offering, price = cheapest(gpu, int(count), market)
        assert (candidate.offering, candidate.hourly_usd) == (offering, pytest.approx(price))
        assert candidate.kind == "cloud" and candidate.market == market and candidate.gpu == gpu
        assert candidate.gpu_count == int(count) and candidate.provider == catalog.get(offering).provider
        quote = catalog.price(offering, market=market)
        assert candidate.price_date == quote.as_of.isoformat() and candidate.price_source == quote.source
        assert candidate.terms == catalog.billing_terms(offering, TODAY)
        # the matrix's own stack for this offering and market, in the region its file sets
        assert catalog.cloud_stacks()[candidate.name] == (catalog.get(offering), market)
        config = load_config(candidate.name, STACKS_DIR)
        assert candidate.region in (config.get("aws:region"), config.get("gcp:region"))


def test_the_spot_flag_overrides_the_task_and_gpus_override_its_alternatives(tmp_path):
    spec = task(tmp_path, accelerators=["T4"], spot=True)
    (spot,), _ = cloud_candidates(spec)
    (on_demand,), _ = cloud_candidates(spec, spot=False)
    assert spot.market == "spot" and spot.name.endswith("-spot") and on_demand.market == "on-demand"
    assert spot.hourly_usd < on_demand.hourly_usd or spot.offering != on_demand.offering
    found, _ = cloud_candidates(spec, gpus="l4,H100:8", spot=False)
    assert [c.ask for c in found] == ["L4:1", "H100:8"]  # names in the catalog's spelling
    no_resources = task(tmp_path)
    assert cloud_candidates(no_resources, gpus="T4")[0][0].offering == on_demand.offering
    assert cloud_candidates(None, gpus="T4")[0][0].offering == on_demand.offering  # no task file at all
    with pytest.raises(CandidateError, match=r"names no GPUs.*--gpus T4,L4"):
        cloud_candidates(no_resources)


def test_unknown_gpu_names_the_file_the_name_and_the_known_models(tmp_path):
    known = load_catalog().gpu_models()
    with pytest.raises(CandidateError) as exc:
        cloud_candidates(task(tmp_path, accelerators=["T4", "T44"]))
    message = str(exc.value)
    assert str(tmp_path / "task.yaml") in message and "resources.accelerators" in message and "'T44'" in message
    assert "did you mean T4" in message and ", ".join(known) in message
    with pytest.raises(CandidateError, match=r"^--gpus: unknown GPU 'X1'"):
        cloud_candidates(task(tmp_path, accelerators=["T4"]), gpus="X1")
    with pytest.raises(CandidateError, match=r"--gpus 'T4:x': .*NAME or NAME:COUNT"):
        cloud_candidates(task(tmp_path, accelerators=["T4"]), gpus="T4:x")


def test_retired_offerings_are_never_candidates_and_are_named():
    catalog = load_catalog()
    every = [o for o in catalog.offerings() if o.kind == "cloud" and clouds.is_cloud(o.provider)]
    retired = [o for o in every if o.is_retired_on(TODAY)]
    assert retired, "the shipped catalog has retired offerings to test with"
    alive = {(o.gpu_model, o.gpu_count) for o in launchable()}
    for o in retired:
        spec = parse_spec({"name": "j", "run": "x"}, "/tmp/task.yaml")
        found, unmatched = cloud_candidates(spec, gpus=f"{o.gpu_model}:{o.gpu_count}")
        if (o.gpu_model, o.gpu_count) in alive:
            (candidate,) = found
            assert candidate.offering != o.id and any(o.id in note and "retired" in note for note in candidate.notes)
        else:
            (miss,) = unmatched
            assert found == [] and "retired" in miss["reason"] and o.id in miss["reason"]
    # on a day before the retirement the same offering competes again
    o = retired[0]
    day = date.fromordinal(o.retired.toordinal() - 30)
    spec = parse_spec({"name": "j", "run": "x"}, "/tmp/task.yaml")
    found, _ = cloud_candidates(spec, gpus=f"{o.gpu_model}:{o.gpu_count}", as_of=day)
    rivals = [x for x in every if (x.gpu_model, x.gpu_count) == (o.gpu_model, o.gpu_count) and not x.is_retired_on(day)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        best = min(rivals, key=lambda x: catalog.price(x.id, as_of=day).hourly_usd)
    assert found[0].offering == best.id


def test_unmatched_alternatives_say_why(tmp_path):
    catalog = load_catalog()
    t4_counts = sorted({o.gpu_count for o in launchable() if o.gpu_model == "T4"})
    missing = max(t4_counts) + 1
    found, unmatched = cloud_candidates(task(tmp_path, accelerators=["T4", f"T4:{missing}", "GTX-1080"]))
    assert [c.ask for c in found] == ["T4:1"]
    assert unmatched[0] == {
        "ask": f"T4:{missing}",
        "reason": f"no cloud offering has {missing}x T4 (counts sold: {', '.join(map(str, t4_counts))})",
    }
    assert unmatched[1]["ask"] == "GTX-1080:1" and "can launch" in unmatched[1]["reason"]
    boxes = [o.id for o in catalog.offerings(gpu="GTX-1080") if o.gpu_count == 1]
    assert boxes and all(o.kind != "cloud" for o in catalog.offerings(gpu="GTX-1080"))  # known, not launchable
    assert f"over SSH instead: {', '.join(boxes)}" in unmatched[1]["reason"] and "--hosts" in unmatched[1]["reason"]
    _, far = cloud_candidates(task(tmp_path, accelerators=["T4"], regions=["ap-nowhere-9"]))
    assert far[0]["ask"] == "T4:1" and "ap-nowhere-9" in far[0]["reason"] and "us-east-1" in far[0]["reason"]


def test_providers_and_regions_narrow_the_search(tmp_path):
    gcp_region = next(r for o in launchable() if o.provider == "gcp" and o.gpu_model == "T4" for r in o.regions[1:])
    spec = task(tmp_path, accelerators=["T4"], providers=["gcp"], regions=[gcp_region])
    (candidate,), _ = cloud_candidates(spec)
    offering, price = cheapest("T4", 1, "on-demand", providers=["gcp"], regions=[gcp_region])
    assert (candidate.offering, candidate.hourly_usd) == (offering, pytest.approx(price))
    assert candidate.provider == "gcp" and candidate.region == gcp_region
    matrix_name = load_catalog().get(offering).stack_name("on-demand")
    assert candidate.name == f"{matrix_name}-{gcp_region}"  # never the matrix stack set to another region
    (spot,), _ = cloud_candidates(spec, spot=True)
    assert spot.name == f"{matrix_name}-{gcp_region}-spot"
    for bad, why in (("hetzner", "no Pulumi program"), ("azure", "cloud providers: aws, gcp")):
        with pytest.raises(CandidateError, match=f"resources.providers.*{bad!r}.*{why}"):
            cloud_candidates(task(tmp_path, accelerators=["T4"], providers=[bad]))


def test_local_candidate_is_priced_like_the_demo(monkeypatch):
    monkeypatch.delenv("GPUBENCH_LOCAL_HOURLY_USD", raising=False)
    from analysis.price.local import DEFAULT_HOURLY_USD

    default = local_candidate()
    assert (default.kind, default.name, default.offering) == ("local", "local", LOCAL_OFFERING)
    assert default.hourly_usd == DEFAULT_HOURLY_USD and "assumed" in default.price_source
    assert default.terms == load_catalog().billing_terms(LOCAL_OFFERING, TODAY)
    assert local_candidate(0.55).hourly_usd == 0.55
    monkeypatch.setenv("GPUBENCH_LOCAL_HOURLY_USD", "0.3")
    assert local_candidate().hourly_usd == 0.3 and "GPUBENCH_LOCAL_HOURLY_USD" in local_candidate().price_source
    monkeypatch.setenv("GPUBENCH_LOCAL_HOURLY_USD", "cheap")
    with pytest.raises(CandidateError, match="'cheap' is not a number"):
        local_candidate()


def test_ssh_candidates_come_from_the_ssh_stacks(tmp_path):
    names = ssh_stack_names()
    assert names, "stacks/ ships SSH stacks"
    found = ssh_candidates([names[0], names[-1].removeprefix("ssh-")])
    assert [c.name for c in found] == list(dict.fromkeys([names[0], names[-1]]))
    catalog = load_catalog()
    for candidate in found:
        offering = load_config(candidate.name)["gpubench:offering"]
        assert candidate.kind == "ssh" and candidate.offering == offering
        assert candidate.hourly_usd == pytest.approx(cost_of(offering, 3600.0).cost_usd)  # one hour, its rule
        assert (
            candidate.gpu == catalog.get(offering).gpu_model and candidate.terms.rule == catalog.get(offering).billing
        )
    with pytest.raises(CandidateError, match=f"no SSH stack of that name.*{names[0]}"):
        ssh_candidates(["nope"])
    (tmp_path / "Pulumi.ssh-box.yaml").write_text(yaml.safe_dump({"config": {"gpubench:host": "h"}}))
    with pytest.raises(CandidateError, match="no gpubench:offering"):
        ssh_candidates(["box"], stacks_dir=tmp_path)
    (tmp_path / "Pulumi.ssh-box.yaml").write_text(yaml.safe_dump({"config": {"gpubench:offering": "x/none"}}))
    with pytest.raises(CandidateError, match="ssh-box: gpubench:offering"):
        ssh_candidates(["box"], stacks_dir=tmp_path)
