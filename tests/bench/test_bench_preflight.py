"""`gpubench bench` checks everything before it shows the plan or asks: every option value and the task,
then for cloud probes the Pulumi CLI and its login, the credentials (an identity call, answered by moto's
STS), the extras and a write to the results bucket. Each failure is named with its fix, all at once,
before any question, and nothing is launched (the stand-in cloud and a recording backend stay untouched,
no bench workspace exists)."""

from __future__ import annotations

import io
import json
import stat
from pathlib import Path

import pytest
import yaml
from bench_fakes import BenchCloud, write_task
from bench_fakes import project as make_project

from analysis.bench.plan import NotReady, preflight_key
from analysis.bench.run import BenchError, bench
from analysis.cli import main
from payload import exitcodes
from payload.storage import open_store


class Untouched:
    """A stack backend and a confirmation that fail the test if bench reaches them."""

    def __init__(self):
        self.calls: list[str] = []

    def backend(self, work_dir):
        self.calls.append(f"backend {work_dir}")
        raise AssertionError("a backend was opened")

    def confirm(self, what, question, default):
        self.calls.append(question)
        return False


def nothing_started(root: Path, guard: Untouched, progress: str) -> None:
    assert guard.calls == [], guard.calls
    assert not (root / ".gpubench").exists()  # no bench workspace, record or stack file
    assert "Start the probes?" not in progress


@pytest.fixture
def root(tmp_path):
    return make_project(tmp_path / "project")


def run(task, root, guard, **kw):
    progress = io.StringIO()
    try:
        bench(task, work_dir=root, backend=guard.backend, confirm=guard.confirm, progress=progress, **kw)
    finally:
        nothing_started(root, guard, progress.getvalue())
    return progress.getvalue()


# --- values -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options, says",
    [
        ({"deadline_hours": float("nan")}, "--deadline nan: give hours > 0"),
        ({"deadline_hours": 0.0}, "--deadline 0.0: give hours > 0"),
        ({"deadline_hours": -1.0}, "--deadline -1.0: give hours > 0"),
        ({"deadline_hours": 1e9}, "--deadline 1e+09: more than 8784 hours (a year)"),
        ({"probe_minutes": 1e9}, "--probe-minutes 1e+09: more than 1440 minutes (a day"),
        ({"probe_minutes": float("inf")}, "--probe-minutes inf: give minutes > 0"),
        ({"budget_usd": float("nan")}, "--budget nan: give US dollars > 0"),
        ({"hourly_usd": -0.5, "local": True}, "--hourly-usd -0.5: give US dollars an hour >= 0"),
        ({"gpus": "T40", "local": True}, "--local probes this machine only"),
        ({"spot": True, "local": True}, "--spot with --local: the market applies to cloud offerings only"),
        ({"hourly_usd": 0.5}, "--hourly-usd prices this machine (--local) only"),
        ({"probe": 0}, "--probe 0: give how many candidates to probe first, a whole number from 1"),
        ({"probe": 2, "local": True}, "--probe with --local: the rest are predicted from the catalog's GPU figures"),
        ({"probe": 2, "gpus": "T4"}, "--probe 2: there are only 1 candidate(s); give --probe 1 or fewer"),
    ],
)
def test_a_bad_value_is_refused_before_the_plan_and_nothing_starts(tmp_path, root, options, says):
    guard = Untouched()
    task = write_task(tmp_path / "t")
    with pytest.raises(BenchError, match=None) as exc:
        run(task, root, guard, results="s3://not-reached", **options)
    assert says in str(exc.value)


def test_cloud_probes_need_a_bucket_a_cloud_instance_can_reach(tmp_path, root):
    guard = Untouched()
    with pytest.raises(BenchError, match="--results .*results"):
        run(write_task(tmp_path / "t"), root, guard, results=str(tmp_path / "results"))


def test_every_bad_value_is_named_at_once(tmp_path, root):
    guard = Untouched()
    with pytest.raises(BenchError) as exc:
        run(write_task(tmp_path / "t"), root, guard, deadline_hours=-1.0, probe_minutes=0.0, budget_usd=float("inf"))
    for flag in ("--deadline -1.0", "--probe-minutes 0.0", "--budget inf"):
        assert flag in str(exc.value)


def without_work(path: Path) -> Path:
    doc = yaml.safe_load(path.read_text())
    del doc["work"]
    path.write_text(yaml.safe_dump(doc))
    return path


def test_work_is_required_unless_only_the_throughput_is_asked_for(tmp_path, root):
    guard = Untouched()
    task = without_work(write_task(tmp_path / "t"))
    with pytest.raises(BenchError, match="no `work:` section.*--throughput-only"):
        run(task, root, guard, results="s3://not-reached")
    with pytest.raises(BenchError, match="--deadline with --throughput-only"):
        run(task, root, guard, throughput_only=True, deadline_hours=3.0, local=True)


def test_a_work_total_no_job_reaches_is_a_task_error(tmp_path, root):
    guard = Untouched()
    task = write_task(tmp_path / "t", work_samples=10**20)
    with pytest.raises(BenchError, match="more than 1e\\+15"):
        run(task, root, guard, local=True)


def test_the_command_exits_2_and_starts_nothing(tmp_path, root, capsys):
    task = write_task(tmp_path / "t")
    for extra in (["--deadline", "nan"], ["--probe-minutes", "1e9"]):
        code = main(["bench", str(task), "--local", "--yes", "--project-dir", str(root), *extra])
        err = capsys.readouterr().err
        assert code == exitcodes.USAGE, err
        assert "probe at most" not in err and "Traceback" not in err
        assert not (root / ".gpubench").exists()


# --- cloud: what a launch needs ------------------------------------------------------------------------


def no_aws_credentials(monkeypatch, tmp_path):
    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))


def test_missing_credentials_and_an_unwritable_bucket_are_named_together_and_nothing_launches(
    tmp_path, root, s3_bucket, moto_server, monkeypatch
):
    """GCP candidates without Google credentials, results to an S3 bucket that does not exist: both named."""
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    cloud = BenchCloud(tmp_path / "cloud", moto_server.endpoint)
    asked: list[str] = []
    progress = io.StringIO()
    try:
        with pytest.raises(NotReady) as exc:
            bench(
                write_task(tmp_path / "t", accelerators=("T4:1", "L4:1"), providers=("gcp",)),
                results="s3://no-such-bucket-preflight",
                backend=cloud.backend,
                work_dir=root,
                progress=progress,
                confirm=lambda what, question, default: asked.append(question) or True,
            )
    finally:
        cloud.shutdown()
    message = str(exc.value)
    assert "gcp credentials: none found: `gcloud auth application-default login`" in message
    assert "aws credentials: STS GetCallerIdentity" not in message  # the bucket's cloud answered: not listed
    assert "bucket s3://no-such-bucket-preflight: cannot write" in message
    assert asked == [] and not cloud.ups and cloud.running() == []
    assert not (root / ".gpubench").exists()


def test_without_the_buckets_credentials_the_write_is_not_tried(tmp_path, root, s3_bucket, monkeypatch):
    no_aws_credentials(monkeypatch, tmp_path)
    guard = Untouched()
    with pytest.raises(NotReady) as exc:
        run(write_task(tmp_path / "t"), root, guard, results=f"s3://{s3_bucket}")
    assert "aws credentials: none found: `aws configure`" in str(exc.value)
    assert f"bucket s3://{s3_bucket}: not tried: writing to it needs the aws credentials" in str(exc.value)


def test_credentials_the_cloud_refuses_are_named(tmp_path, root, s3_bucket, monkeypatch):
    """Keys that are present but not accepted: the identity call (STS) fails, named with the fix."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_STS", "http://127.0.0.1:9")  # nothing answers there
    guard = Untouched()
    with pytest.raises(NotReady, match=r"aws credentials: refused \(.*\): `aws sso login` or `aws configure`"):
        run(write_task(tmp_path / "t"), root, guard, results=f"s3://{s3_bucket}")


def test_gcp_candidates_need_application_default_credentials(tmp_path, root, s3_bucket, monkeypatch):
    monkeypatch.delenv("GOOGLE_APPLICATION_CREDENTIALS", raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(tmp_path / "gcloud"))
    guard = Untouched()
    with pytest.raises(NotReady, match="gcp credentials: none found: `gcloud auth application-default login`"):
        run(write_task(tmp_path / "t", providers=("gcp",)), root, guard, results=f"s3://{s3_bucket}")


def fake_pulumi(bin_dir: Path, whoami: str, code: int) -> None:
    """A `pulumi` on PATH whose `whoami` prints `whoami` and exits `code` (version works)."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    exe = bin_dir / "pulumi"
    exe.write_text(
        "#!/bin/sh\n"
        'if [ "$1" = version ]; then echo v3.200.0; exit 0; fi\n'
        f"printf '%s\\n' {json.dumps(whoami)} >&2\nprintf '%s\\n' {json.dumps(whoami)}\nexit {code}\n"
    )
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)


@pytest.mark.parametrize(
    "pulumi, says",
    [
        (None, "pulumi CLI: not on PATH: `curl -fsSL https://get.pulumi.com | sh`"),
        (
            ("error: PULUMI_ACCESS_TOKEN must be set for login during non-interactive CLI sessions", 255),
            "pulumi login: not logged in ('error: PULUMI_ACCESS_TOKEN must be set",
        ),
        (("User: me\nBackend URL: file://~", 0), "set PULUMI_CONFIG_PASSPHRASE"),
    ],
)
def test_the_pulumi_cli_and_its_login_are_checked_before_asking(
    tmp_path, root, s3_bucket, monkeypatch, capsys, pulumi, says
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    if pulumi:
        fake_pulumi(bin_dir, *pulumi)
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE", raising=False)
    monkeypatch.delenv("PULUMI_CONFIG_PASSPHRASE_FILE", raising=False)
    task = write_task(tmp_path / "t")
    code = main(["bench", str(task), "--results", f"s3://{s3_bucket}", "--project-dir", str(root)])
    err = capsys.readouterr().err
    assert code == exitcodes.MISSING, err
    assert says in err and "Start the probes?" not in err and "Traceback" not in err, err
    assert not (root / ".gpubench").exists()


def test_when_all_is_in_place_the_bucket_holds_the_check_under_the_benchs_prefix(tmp_path, root, s3_bucket):
    asked = []
    with pytest.raises(Exception, match="not confirmed"):
        bench(
            write_task(tmp_path / "t"),
            results=f"s3://{s3_bucket}/bench",
            backend=Untouched().backend,
            work_dir=root,
            progress=io.StringIO(),
            confirm=lambda what, question, default: asked.append(question) or False,
        )
    assert asked == ["Start the probes?"]
    keys = [o.key for o in open_store(f"s3://{s3_bucket}/bench").list("_gpubench/")]
    (key,) = keys
    assert key == preflight_key(key.split("/")[2]) and not [o for o in open_store(f"s3://{s3_bucket}").list("runs/")]


def test_the_documented_ranges_are_the_codes():
    from analysis.bench.plan import OPTIONS
    from payload.workloads.spec import MAX_GPUS_PER_MACHINE, MAX_SCRIPT_CHARS

    text = " ".join((Path(__file__).resolve().parents[2] / "docs" / "bench.md").read_text().split())
    for option in OPTIONS.values():
        assert f"`{option.flag}`" in text and f"{option.high:,.0f}" in text, option
    assert f"at most {MAX_GPUS_PER_MACHINE}" in text and f"at most {MAX_SCRIPT_CHARS:,} characters" in text


def test_a_missing_extra_is_named_with_its_install_command(tmp_path, root, s3_bucket, monkeypatch):
    import payload.extras

    real = payload.extras.installed
    monkeypatch.setattr(payload.extras, "installed", lambda module: module != "pulumi_gcp" and real(module))
    guard = Untouched()
    with pytest.raises(NotReady, match=r"extra \[infra\]: missing pulumi_gcp: pip install 'gpubench\[infra\]'"):
        run(write_task(tmp_path / "t"), root, guard, results=f"s3://{s3_bucket}")
