"""The contract across infra, payload and analysis, run together.

infra renders a real stack's cloud-init; the payload environment is taken
exactly as the user-data hands it to the container (the env file in
#cloud-config write_files, read the way `docker run --env-file` reads it);
`python -m payload run` runs with it against a moto S3 bucket; analysis
collects that bucket and builds the report. Any package drifting from
docs/CONTRACTS.md (an env key the payload does not read, a value it rejects,
a result that does not validate, a run collect cannot price with the stack's
offering and market, a missing report row) fails this test.

Overrides of the rendered environment, each because this is not the guest:
- GPUBENCH_BENCHMARK: the first benchmark of the stack's suite only, and
  GPUBENCH_EPOCHS / GPUBENCH_PARAMS to make it tiny (the full suite takes
  hours on a CPU).
- GPUBENCH_DATA=synthetic: the rendered default downloads datasets; no internet.
- GPUBENCH_EXPECT_GPU=0: this machine has no GPU (the stack rightly expects one).
- GPUBENCH_HOST_EVENTS: the guest path /var/lib/gpubench is not ours; a temp
  file holds the same lines event.sh would write.
- GPUBENCH_SPOOL: a temp dir instead of ~/.cache.
- Not in the env file but around it: AWS_ENDPOINT_URL and dummy credentials
  point boto3 at moto (the instance role in the cloud), and both metadata
  endpoints at a closed port (no IMDS off-cloud).
GPUBENCH_RESULTS is kept as rendered: the bucket it names is created on moto.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse

import pytest
import yaml
from servers import closed_port_url, create_s3_bucket

STACK = "aws-g4dn-1x"

# Variables the user-data writes that are not `payload run` options, and who reads them.
NOT_RUN_OPTIONS = {
    "GPUBENCH_IMAGE": "payload.gpu records it as software.image",
    "AWS_DEFAULT_REGION": "boto3 (the bucket's region)",
}


def parse_env_file(text: str) -> dict[str, str]:
    """`docker run --env-file` semantics: KEY=value per line, no quoting, # comments."""
    env = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, sep, value = line.partition("=")
        assert sep, f"env file line without '=': {line!r}"
        env[key] = value
    return env


@pytest.fixture(scope="module")
def rendered():
    """The stack rendered by infra exactly as `pulumi up` would run the program (under mocks)."""
    from infra import stacks as stackfiles
    from infra.catalog import load_catalog
    from infra.cloud_init import ENV_FILE, HOST_EVENTS
    from infra.render import render

    out = render(STACK, stackfiles.load_config(STACK), load_catalog())
    assert out.user_data and out.user_data.startswith("#cloud-config\n"), "no #cloud-config user-data rendered"
    doc = yaml.safe_load(out.user_data)
    files = {f["path"]: f for f in doc["write_files"]}
    assert ENV_FILE in files, f"user-data writes no {ENV_FILE}: {sorted(files)}"
    env = parse_env_file(files[ENV_FILE]["content"])
    run_sh = files["/usr/local/lib/gpubench/run.sh"]["content"]
    assert f"--env-file {ENV_FILE}" in run_sh, "the container no longer gets the env file"
    assert env["GPUBENCH_HOST_EVENTS"] == HOST_EVENTS
    return out, env


def test_every_env_key_is_read_by_the_payload(rendered):
    from payload.config import OPTIONS, resolve

    _, env = rendered
    options = {o.env for o in OPTIONS}
    unknown = sorted(set(env) - options - set(NOT_RUN_OPTIONS))
    assert not unknown, f"user-data writes variables the payload does not read: {unknown}"
    for key in (
        "GPUBENCH_BENCHMARK",
        "GPUBENCH_RESULTS",
        "GPUBENCH_STACK",
        "GPUBENCH_OFFERING",
        "GPUBENCH_MARKET",
        "GPUBENCH_HOURLY_USD",
        "GPUBENCH_PRICE_SOURCE",
        "GPUBENCH_PRICE_AS_OF",
        "GPUBENCH_DEADLINE",
        "GPUBENCH_EXPECT_GPU",
        "GPUBENCH_IMAGE",
    ):
        assert key in env, f"user-data no longer writes {key} (docs/CONTRACTS.md)"
    # Every value as rendered parses as the payload parses it (suite names, market, deadline, price...).
    cfg = resolve({}, environ=env)
    assert cfg.stack == STACK and cfg.expect_gpu is True


def test_rendered_env_runs_the_payload_into_s3_and_analysis_prices_and_reports_it(
    rendered, moto_server, tmp_path, monkeypatch
):
    from infra.catalog import load_catalog
    from payload.schema import validate_result
    from payload.storage import open_store

    out, env = rendered
    results_url = env["GPUBENCH_RESULTS"]
    assert results_url.startswith("s3://"), results_url
    bucket = urllib.parse.urlparse(results_url).netloc
    try:
        create_s3_bucket(moto_server.endpoint, bucket)
    except Exception as exc:  # noqa: BLE001 - the module may run twice in one session
        if "BucketAlreadyOwnedByYou" not in str(exc):
            raise
    for k, v in {
        "AWS_ENDPOINT_URL": moto_server.endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }.items():
        monkeypatch.setenv(k, v)
    monkeypatch.delenv("AWS_ENDPOINT_URL_S3", raising=False)

    host_events = tmp_path / "events.jsonl"
    host_events.write_text(
        "".join(  # the lines launch.sh / event.sh write on the guest
            json.dumps({"event": e, "time": t, "source": "host", "detail": ""}) + "\n"
            for e, t in (
                ("instance_launch", "2025-01-06T06:00:00Z"),
                ("boot_done", "2025-01-06T06:00:40.000Z"),
                ("container_start", "2025-01-06T06:01:10.000Z"),
            )
        )
    )
    first = env["GPUBENCH_BENCHMARK"].split(",")[0]
    overrides = {
        "GPUBENCH_BENCHMARK": first,
        "GPUBENCH_EPOCHS": "1",
        "GPUBENCH_PARAMS": "samples=256,val_samples=64,warmup_steps=1",
        "GPUBENCH_DATA": "synthetic",
        "GPUBENCH_EXPECT_GPU": "0",
        "GPUBENCH_HOST_EVENTS": str(host_events),
        "GPUBENCH_SPOOL": str(tmp_path / "spool"),
    }
    closed = closed_port_url()
    base = {k: v for k, v in os.environ.items() if not k.startswith("GPUBENCH_")}
    proc_env = {
        **base,
        **env,
        **overrides,
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "AWS_EC2_METADATA_SERVICE_ENDPOINT": closed + "/",
        "GCE_METADATA_HOST": closed[len("http://") :],
    }
    proc = subprocess.run(
        [sys.executable, "-m", "payload", "run"], env=proc_env, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    # The bucket layout: runs/<stack>/<run-id>/{result.json,events.jsonl,epochs.csv}
    store = open_store(results_url)
    keys = sorted(o.key for o in store.list(f"runs/{STACK}/"))
    results = [k for k in keys if k.endswith("/result.json")]
    assert len(results) >= 1, keys
    key = results[-1]
    run_dir = key.rsplit("/", 1)[0]
    assert {f"{run_dir}/events.jsonl", f"{run_dir}/epochs.csv"} <= set(keys)
    result = validate_result(json.loads(store.get_bytes(key)))
    assert result["status"] == "completed" and result["stack"] == STACK
    assert result["benchmark"]["name"] == first
    assert result["offering"]["id"] == env["GPUBENCH_OFFERING"]
    assert result["offering"]["market"] == env["GPUBENCH_MARKET"]
    assert result["price"]["hourly_usd"] == pytest.approx(float(env["GPUBENCH_HOURLY_USD"]))
    assert result["price"]["source"] == env["GPUBENCH_PRICE_SOURCE"]
    assert result["price"]["as_of"] == env["GPUBENCH_PRICE_AS_OF"]
    assert result["software"]["image"] == env["GPUBENCH_IMAGE"]
    assert {"instance_launch", "boot_done", "container_start"} <= {e["event"] for e in result["timeline"]}
    # ... and its announcement in the stack's results journal (payload/layout.py), beside runs/
    from payload.layout import journal_prefix, journal_run

    entries = [o.key for o in store.list(journal_prefix(STACK))]
    assert result["run_id"] in {journal_run(k, STACK) for k in entries}, entries

    # analysis: collect from that bucket, priced with the stack's offering and market.
    from analysis.cli import main

    offering, market = load_catalog().cloud_stacks()[STACK]
    report_dir = tmp_path / "report"
    assert (
        main(["collect", "--results", results_url, "--table", str(report_dir), "--spot-history", "off", "--json"]) == 0
    )
    import pandas as pd

    table = pd.read_parquet(report_dir / "results.parquet")
    row = table[table["key"].astype(str).str.endswith(key) | (table["run_id"] == result["run_id"])]
    assert len(row) == 1, table[["run_id", "key"]].to_string()
    row = row.iloc[0]
    assert (row["stack"], row["offering_id"], row["market"]) == (STACK, offering.id, market)
    assert row["hourly_usd"] == pytest.approx(float(env["GPUBENCH_HOURLY_USD"]))
    assert row["price_source"] == env["GPUBENCH_PRICE_SOURCE"]
    assert row["billed_cost_usd"] > 0 and row["train_cost_usd"] > 0
    # the launch price infra wrote is the catalog's own price for that offering
    assert load_catalog().price(offering.id).hourly_usd == pytest.approx(row["hourly_usd"])
    # the settled stack is checked by its journal from the next collect on (analysis/collect/survey.py)
    from analysis.collect.manifest import MANIFEST_NAME, Manifest
    from analysis.collect.survey import journal_since

    settled = Manifest(report_dir / MANIFEST_NAME).settled(results_url)
    assert journal_since(settled[f"runs/{STACK}/"].stamp) is not None, settled

    # ...and the report has its row.
    assert main(["report", "--table", str(report_dir), "--out", str(report_dir), "--json"]) == 0
    summary = pd.read_csv(report_dir / "summary.csv")
    mine = summary[
        (summary["offering_id"] == offering.id) & (summary["benchmark"] == first) & (summary["market"] == market)
    ]
    assert len(mine) == 1, summary[["benchmark", "offering_id", "market"]].to_string()
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    assert f"<td>{offering.id}</td>" in page.replace("<wbr>", "")  # ids may wrap after "/", "+" and "-"
