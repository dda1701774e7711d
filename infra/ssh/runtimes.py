"""Runtimes (docker | venv): a stack as a `Plan`: uploads, quick commands before launch, a setup
script run detached (slow pulls and installs survive a dropped connection) and the payload command,
which writes a `file://` bucket in the run directory: the host never needs cloud credentials.
"""

from __future__ import annotations

import datetime as _dt
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from infra.bundle import WORKLOAD_SPEC_NAME, Bundle, build_bundle, build_workload_bundle
from infra.images import payload_image, public_image, workload_image
from infra.ssh.config import SshStack
from infra.ssh.layout import RunLayout
from payload.config import render_argv
from payload.timestamps import iso
from payload.workloads.jobvenv import ENVS_ENV, INHERIT_ENV


class Raw(str):
    """A shell word written as is (not quoted), e.g. a command substitution."""


def shell_words(argv: list[str]) -> str:
    return " ".join(a if isinstance(a, Raw) else shlex.quote(a) for a in argv)


@dataclass
class Plan:
    uploads: list[tuple[bytes, str]] = field(default_factory=list)  # (data, absolute remote path)
    prepare: list[str] = field(default_factory=list)  # run synchronously before launch
    setup: str = "true"  # shell script body, run detached
    payload: list[str] = field(default_factory=list)  # argv, exec'd by payload.sh
    env: dict[str, str] = field(default_factory=dict)  # for payload.sh
    stop: str | None = None  # extra shell to stop the run
    image: str | None = None


def payload_args(
    cfg: SshStack,
    results_url: str,
    spool: str,
    host_events: str,
    now: _dt.datetime | None = None,
    workload: str | None = None,
) -> list[str]:
    """`python -m payload run` options from the stack (the payload's own option names)."""
    now = now or _dt.datetime.now(_dt.timezone.utc)
    deadline = iso(now + _dt.timedelta(hours=cfg.max_hours), seconds=True)
    offering = dict(cfg.offering_options) or {"offering": cfg.offering, "market": "on-demand"}
    return render_argv(
        {
            "benchmark": list(cfg.benchmark) or None,
            "workload": workload,
            "results": results_url,
            "stack": cfg.stack,
            **offering,
            "precision": cfg.precision,
            "spool": spool,
            "host_events": host_events,
            "deadline": deadline,
            "epochs": cfg.epochs,
            "steps": cfg.steps,
            "batch_size": cfg.batch_size,
            "data": cfg.data or None,
            "param": cfg.params or None,
            "gpus": None if cfg.gpus == "all" else cfg.gpus,
            "expect_gpu": cfg.expect_gpu,
        }
    )


def _files(cfg: SshStack, run: RunLayout, bundle_loader: Callable[[], Bundle] | None):
    """(source directory, uploads, prepare commands, workload directory). The gpubench source (from
    `bundle_loader`) is uploaded and unpacked once per digest; the workload is uploaded once per content
    hash and unpacked into each run's own directory (a job writing into its workdir never touches another
    run's copy)."""
    q = shlex.quote
    src, uploads, prepare, workdir = "", [], [], None
    if bundle_loader:
        bundle = bundle_loader()
        src = f"{run.root}/src/{bundle.digest}"
        uploads, prepare = [(bundle.data, f"{src}.tar.gz")], [_unpack(src)]
    if cfg.workload:
        bundle = build_workload_bundle(cfg.workload)
        tarball, workdir = f"{run.root}/src/workload-{bundle.digest}.tar.gz", f"{run.dir}/workload"
        uploads.append((bundle.data, tarball))
        prepare.append(f"rm -rf {q(workdir)} && mkdir -p {q(workdir)} && tar -xzf {q(tarball)} -C {q(workdir)}")
    return src, uploads, prepare, workdir


def docker_plan(
    cfg: SshStack, run: RunLayout, has_gpu: bool, bundle_loader: Callable[[], Bundle] = build_bundle
) -> Plan:
    """The cloud stacks' container (public image with the bundle installed at start, or a prebuilt
    `payloadImage`), the run directory mounted as its bucket."""
    public = None if cfg.payload_image else public_image(cfg.image_generation)
    if public is not None and cfg.workload:
        public = workload_image(cfg.workload) or public
    image = public.image if public else payload_image(cfg.payload_image, cfg.image_generation)
    name = run.container_name
    q = shlex.quote
    setup = f"docker image inspect {q(image)} >/dev/null 2>&1 || docker pull {q(image)}"
    src, uploads, prepare, workdir = _files(cfg, run, bundle_loader if public else None)
    argv = ["docker", "run", "--rm", "--name", name, "--user", Raw('"$(id -u):$(id -g)"'), "-e", "HOME=/tmp"]
    for mount in (f"{run.results}:/gpubench/results", f"{run.spool}:/gpubench/spool", f"{run.host}:/gpubench/host:ro"):
        argv += ["-v", mount]
    spec = None
    if workdir:  # the same path the cloud stacks' code bundle uses (infra.config.CLOUD_WORKLOAD_SPEC)
        argv += ["-v", f"{workdir}:/gpubench/workload", "-w", "/gpubench/workload"]
        spec = f"/gpubench/workload/{WORKLOAD_SPEC_NAME}"
    if has_gpu and cfg.gpus != "0":
        argv += ["--gpus", "all"]
    args = payload_args(
        cfg, "file:///gpubench/results", "/gpubench/spool", "/gpubench/host/events.jsonl", workload=spec
    )
    if public:
        # install-payload.sh, as the cloud hosts run it: the K80 image's Python 3.8 gets the extra's requirements
        # and the sources on sys.path (it cannot build the project). PIP_USER: the container runs as the SSH
        # user, so pip installs into HOME (/tmp)
        root = "/opt/gpubench/gpubench"
        install = (
            f"PIP_USER=1 bash {q(root + '/infra/install-payload.sh')} {q(root)} {public.install} {q(public.extra)}"
        )
        refused = f"{{ echo {q(f'gpubench: could not install the payload into {image} (see the error above): it needs python3 >= 3.11 with pip, docs/workloads.md')} >&2; exit 1; }}"
        argv += ["-v", f"{src}:/opt/gpubench", "--entrypoint", "/bin/bash", image, "-c"]
        argv += [f"{install} || {refused}; exec python3 -m payload run {shell_words(args)}"]
    else:
        argv += [image, *args]
    stop = f"docker stop -t 60 {q(name)} >/dev/null 2>&1 || true"
    return Plan(uploads=uploads, prepare=prepare, setup=setup, payload=argv, stop=stop, image=image)


def _unpack(src: str) -> str:
    """Unpack the (sha256-checked) bundle once per content hash. A tree is reused only when `tar -d`
    finds every member unchanged and no file added (a planted sitecustomize.py); else it is unpacked
    again under a temporary name and moved in whole, so it is complete or absent."""
    q = shlex.quote
    tarball, tmp = q(src + ".tar.gz"), q(src + ".tmp")
    listed = f"cd {q(src)} && find . ! -type d | sed 's|^\\./||' | LC_ALL=C sort"
    members = f"tar -tzf {tarball} | grep -v '/$' | LC_ALL=C sort"
    same = f'tar -dzf {tarball} -C {q(src)} >/dev/null 2>&1 && [ "$({listed})" = "$({members})" ]'
    return (
        f"{same} || (rm -rf {tmp} && mkdir -p {tmp} && "
        f"tar -xzf {tarball} -C {tmp} && rm -rf {q(src)} && mv {tmp} {q(src)})"
    )


def venv_plan(cfg: SshStack, run: RunLayout, has_gpu: bool, bundle_loader: Callable[[], Bundle] = build_bundle) -> Plan:
    """The gpubench source, pip-installed into a venv (or run by an existing interpreter)."""
    src, uploads, prepare, workdir = _files(cfg, run, bundle_loader)
    q = shlex.quote
    results = f"file://{run.results}"
    spec = f"{workdir}/{WORKLOAD_SPEC_NAME}" if workdir else None
    args = payload_args(cfg, results, run.spool, f"{run.host}/events.jsonl", workload=spec)
    # a workload's own virtual environments (payload.workloads.jobvenv) live beside the run's, under remoteDir
    job_envs = {ENVS_ENV: f"{run.root}/envs"}
    if cfg.remote_python:  # reuse an interpreter that already has TensorFlow: no venv, no pip
        return Plan(
            uploads=uploads,
            prepare=prepare,
            payload=[cfg.remote_python, "-m", "payload", "run", *args],
            # the job's environment sees that interpreter's frameworks; its installs stay in its own
            env={"PYTHONPATH": f"{src}/gpubench", **job_envs, INHERIT_ENV: "1"},
        )
    venv = f"{run.root}/venvs/{src.rsplit('/', 1)[1]}"  # one per bundle digest
    tmp = f"{q(venv)}.tmp.$$"
    extras = f"[{cfg.pip_extras}]" if cfg.pip_extras.strip() else ""
    setup = "\n".join(
        [
            "set -e",
            f"if [ ! -f {q(venv)}/.gpubench-ready ]; then",
            f"  rm -rf {tmp}",
            f"  python3 -m venv {tmp}",
            f"  {tmp}/bin/python -m pip install --quiet --upgrade pip",
            f"  {tmp}/bin/python -m pip install {q(src + '/gpubench' + extras)}",
            f"  touch {tmp}/.gpubench-ready",
            f"  mv -T {tmp} {q(venv)} 2>/dev/null || rm -rf {tmp}  # another run finished the same venv first",
            "fi",
        ]
    )
    # Built under a temporary name and moved in whole, so a venv that exists is complete. Its
    # interpreter finds site-packages through pyvenv.cfg next to it, so the move is safe.
    return Plan(
        uploads=uploads,
        prepare=prepare,
        setup=setup,
        payload=[f"{venv}/bin/python", "-m", "payload", "run", *args],
        env=job_envs,
    )


RUNTIMES: dict[str, Callable[..., Plan]] = {"docker": docker_plan, "venv": venv_plan}


def plan_for(cfg: SshStack, run: RunLayout, has_gpu: bool, **kw) -> Plan:
    return RUNTIMES[cfg.runtime](cfg, run, has_gpu, **kw)
