"""Every name, id, tag, label and key the program renders, over the whole stack matrix, against the
providers' documented rules (infra/aws/rules.py, infra/gcp/rules.py).

Pulumi's mocks accept any string; these tables stand in for what a real `pulumi up` would refuse.
The matrix: every stack file (benchmark and results stacks), recurring stacks of each cloud and
market with each schedule form, the sweeper stacks, the stacks `gpubench bench` generates, the SSH
stacks' bucket keys, and stack names at the edges of what a stack name may be."""

from __future__ import annotations

import json

import pytest
from infra_matrix import NOW, STACK_NAMES

from infra import clouds, provider_rules
from infra import stacks as stackfiles
from infra.aws.rules import TABLE as AWS
from infra.catalog import load_catalog
from infra.gcp.rules import TABLE as GCP

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

# Stack names at the edges of the stack-name alphabet (payload.layout: letters, digits, '.', '_',
# '-', at most 100): uppercase, a dot, an underscore, a leading digit, the longest.
EDGE_NAMES = ("Team.GPU_bench-1", "9lives", "x" * 100, "recurring-gcp-l4-1x")
# SSH settings add a firewall rule (GCP) and a key pair (AWS).
SSH = {
    "gpubench:sshCidr": "203.0.113.7/32",
    "gpubench:sshPublicKey": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIG9k user@host",
}
SCHEDULES = {"aws": ("cron(0 3 * * ? *)", "rate(1 hour)", "cron(0 3 ? * MON *)"), "gcp": ("0 3 * * *", "0 */4 * * *")}


# Resource types of no cloud's (the pulumiverse-time deadline) that render nothing a cloud checks.
COMMON_EXEMPT = {"time:index/offset:Offset": "a timestamp kept in the Pulumi state; no cloud sees it"}


def unchecked_types(table: provider_rules.Table, types: set[str]) -> list[str]:
    """Resource types the table says nothing about: a new resource must be added to it."""
    known = {*table.fields, *table.exempt, *COMMON_EXEMPT}
    return sorted(t for t in types if t not in known)


def rendered_violations(resources) -> list[str]:
    """Every rule the rendered resources (infra.render.ResourceRecord) break, and every resource
    type no table knows; the cloud of a resource is the first part of its type (`aws:`, `gcp:`)."""
    out: list[str] = []
    for r in resources:
        if not r.custom:
            continue
        cloud = r.type.split(":", 1)[0]
        if not clouds.is_cloud(cloud):
            if r.type not in COMMON_EXEMPT:
                out.append(f"{r.type} {r.name}: no rules table knows this resource type")
            continue
        table = provider_rules.table_of(cloud)
        if unchecked_types(table, {r.type}):
            out.append(f"{r.type} {r.name}: no rules for this resource type in infra/{cloud}/rules.py")
        out.extend(provider_rules.violations(table, r.type, r.name, r.inputs))
    return out


def _render(stack, config):
    from infra.render import render

    return render(stack, config, load_catalog(), now=NOW)


def _recurring(bench: str, every: str, name: str | None = None):
    config = {**stackfiles.load_config(bench), "gpubench:stackType": "recurring", "gpubench:every": every}
    return name or f"recurring-{bench}", config


def _sweeper(cloud: str, name: str):
    region = {"aws": "us-east-1", "gcp": "us-central1"}[cloud]
    return name, {"gpubench:stackType": "sweeper", "gpubench:provider": cloud, f"{cloud}:region": region}


def _bench_generated(offering_stack: str):
    """A stack as `gpubench bench` writes it: the offering's stack with the probe's job keys."""
    from pathlib import Path

    from analysis.bench.candidates import Candidate
    from analysis.bench.runners import probe_stack_name, stack_config

    catalog = load_catalog()
    config = stackfiles.load_config(offering_stack)
    offering = catalog.get(config["gpubench:offering"])
    market = config.get("gpubench:market", "on-demand")
    cand = Candidate(
        "cloud",
        offering.stack_name(market),
        offering.id,
        offering.provider,
        None,
        market,
        None,
        1,
        None,
        None,
        None,
        None,
    )
    task = Path(__file__).resolve().parents[2] / "examples" / "keras-mnist" / "workload.yaml"
    name = probe_stack_name(cand, "20300102T030400Z-5f3a9c")
    scheme = {"aws": "s3://", "gcp": "gs://"}[offering.provider]
    return name, stack_config(
        cand,
        task=task,
        probe_seconds=300,
        hours=0.5,
        results=f"{scheme}my-results",
        stacks_dir=stackfiles.STACKS_DIR,
        catalog=catalog,
    )


def extra_matrix() -> list[tuple[str, dict]]:
    """The stacks that are not stack files: recurring, sweeper, bench-generated, edge names."""
    out = []
    for cloud, bases in {"aws": ("aws-g4dn-1x", "aws-p3-8x-spot"), "gcp": ("gcp-t4-1x-spot", "gcp-h100-8x")}.items():
        out.extend(_recurring(bases[0], every) for every in SCHEDULES[cloud])  # each schedule form
        out.append(_recurring(bases[1], SCHEDULES[cloud][0]))  # the other market and family
        out.append(_sweeper(cloud, f"{cloud}-sweeper"))
        out.extend(_sweeper(cloud, name) for name in EDGE_NAMES)
        out.extend(_recurring(bases[0], SCHEDULES[cloud][0], name) for name in EDGE_NAMES)
        out.append((EDGE_NAMES[0], stackfiles.load_config(bases[0])))
        out.append((f"{bases[0]}-ssh", {**stackfiles.load_config(bases[0]), **SSH}))
        out.extend(_bench_generated(base) for base in bases)
    return out


@pytest.fixture(scope="module")
def extra_rendered():
    return [(name, _render(name, config)) for name, config in extra_matrix()]


def test_every_stack_file_renders_values_the_providers_accept(rendered):
    problems = [f"{name}: {p}" for name in STACK_NAMES for p in rendered_violations(rendered[name].resources)]
    assert problems == []


def test_recurring_sweeper_bench_and_edge_stacks_render_values_the_providers_accept(extra_rendered):
    problems = [f"{name}: {p}" for name, r in extra_rendered for p in rendered_violations(r.resources)]
    assert problems == []


def test_the_matrix_covers_every_kind_of_stack(rendered, extra_rendered):
    kinds = {r.exports.get("every") is not None for _, r in extra_rendered}
    assert kinds == {True, False}  # recurring stacks and others
    types = {
        res.type for r in [*rendered.values(), *(r for _, r in extra_rendered)] for res in r.resources if res.custom
    }
    for cloud, table in (("aws", AWS), ("gcp", GCP)):
        mine = {t for t in types if t.startswith(f"{cloud}:")}
        assert unchecked_types(table, mine) == []
        # every type the table describes is one the program renders (no stale rows)
        assert set(table.fields) <= mine


def test_ssh_stacks_and_run_keys_are_valid_object_keys():
    from payload.layout import result_key

    names = [*stackfiles.ssh_stack_names(), *STACK_NAMES, *EDGE_NAMES]
    key = max((result_key(n, "20300102T030400Z-i-0abc-resnet50") for n in names), key=len)
    for table, rule in ((AWS, "s3-object-key"), (GCP, "gcs-object-name")):
        assert table.rule(rule).problem(key) is None


@pytest.mark.parametrize(
    "table, rule, bad",
    [
        (GCP, "service-account-id", "gb-gcp-sweeper:sweeper-d06c77"),
        (GCP, "service-account-id", "gb-Team.GPU-1a2b3c"),
        (GCP, "service-account-id", "gb-x"),
        (GCP, "label-key", "Gpubench-stack"),
        (GCP, "label-value", "Team.GPU"),
        (GCP, "compute-name", "9lives-00000000"),
        (AWS, "iam-tag-value", "cron(0 3 * * ? *)"),
        (AWS, "iam-tag-value", "rate(1 hour)"),
        (AWS, "tag-value", "cron(0 3 ? * MON *)"),
        (AWS, "iam-tag-key", "aws:stack"),
        (AWS, "sg-name", "sg-1a2b3c4"),
        (AWS, "lambda-function-name", "gpubench-sweeper-Team.GPU"),
        (AWS, "ec2-tag-key", "gpubench/stack"),
        (AWS, "s3-bucket-name", "My_Bucket"),
    ],
)
def test_the_rules_refuse_what_the_providers_refuse(table, rule, bad):
    problem = table.rule(rule).problem(bad)
    assert problem is not None and table.rule(rule).source in problem


@pytest.mark.parametrize(
    "table, rule, good",
    [
        (GCP, "service-account-id", "gb-gcp-sweeper-d06c77"),
        (AWS, "iam-tag-value", "2030-01-02T03:04:00Z"),
        (AWS, "iam-tag-value", "aws/g4dn.xlarge"),
        (AWS, "iam-tag-key", "gpubench:hourly-usd"),
        (AWS, "ec2-tag-key", "gpubench:expires-at"),
        (GCP, "label-value", "gcp_n1-standard-8_1xv100"),
    ],
)
def test_the_rules_accept_what_the_program_writes(table, rule, good):
    assert table.rule(rule).problem(good) is None


def test_every_rule_cites_its_source():
    for table in (AWS, GCP):
        for name, rule in table.rules.items():
            assert rule.source.startswith("https://"), name
            assert rule.says and rule.max_len > 0, name


@pytest.mark.parametrize("cloud, name", [("aws", "My_Results"), ("gcp", "My_Results"), ("gcp", "goog-results")])
def test_a_bucket_name_the_cloud_refuses_is_refused_when_the_stack_is_read(cloud, name):
    from infra.config import ConfigError, parse_config

    raw = {"gpubench:stackType": "results", "gpubench:provider": cloud, "gpubench:bucketName": name}
    with pytest.raises(ConfigError, match=f"gpubench:bucketName: .*{name}.*choose another name"):
        parse_config(raw, f"{cloud}-results")
    ok = parse_config({**raw, "gpubench:bucketName": "my-gpubench-results"}, f"{cloud}-results")
    assert ok.bucket_name == "my-gpubench-results"


def test_the_policy_documents_fit_iams_limits_and_statement_ids(rendered):
    from infra.aws.rules import TABLE

    policies = [r for name in STACK_NAMES for r in rendered[name].of_type("aws:iam/rolePolicy:RolePolicy")]
    assert policies
    bad = {"policy": json.dumps({"Statement": [{"Sid": "own-runs", "Effect": "Allow"}]})}
    assert provider_rules.violations(TABLE, "aws:iam/rolePolicy:RolePolicy", "x", bad)


def test_names_made_from_any_stack_name_pass_the_rules():
    """Every stack name the project accepts (payload.layout's alphabet, up to 100 characters)
    gives GCP account ids, VM name patterns and Lambda names the providers accept."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from infra.aws.component import lambda_function_name
    from infra.gcp.component import name_pattern, service_account_id
    from payload.layout import NAME_PATTERNS

    @settings(max_examples=100, deadline=None)
    @given(st.from_regex(NAME_PATTERNS["stack name"], fullmatch=True), st.sampled_from(["", "launcher", "sweeper"]))
    def check(stack, kind):
        if ".." in stack:
            return
        assert GCP.rule("service-account-id").problem(service_account_id(stack, kind)) is None
        assert GCP.rule("compute-name").problem(name_pattern(stack).replace("#", "0")) is None
        assert AWS.rule("lambda-function-name").problem(lambda_function_name(stack)) is None

    check()
    ids = {service_account_id("gcp-t4-1x", k) for k in ("", "launcher", "sweeper", "invoker")}
    assert len(ids) == 4  # the accounts of one stack stay apart
