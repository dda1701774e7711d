"""``python -m payload run``: one suite, one result per benchmark, nothing lost. The spool flush, identity,
price, preemption watcher and stop signals once, then one payload.run.Run per job; the first interruption
ends the suite (the next boot resumes it).
"""

from __future__ import annotations

import os
import signal
import threading
import time

from payload import exitcodes
from payload.builtin import BuiltinJob
from payload.config import RunConfig
from payload.events import note
from payload.identity import PreemptionWatcher, detect_identity
from payload.run import Run, SuiteContext, price_row
from payload.spool import Spool, SpoolingStore
from payload.storage import open_store
from payload.workloads import WorkloadJob, load_spec

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


def _install_stop_handlers(watcher: PreemptionWatcher) -> dict:
    """SIGTERM (docker stop, ACPI shutdown, `timeout`), SIGINT (Ctrl-C) and SIGHUP (a closed terminal) act like
    a preemption notice: the job's process tree is ended, an ``interrupted`` result written; the old handlers."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    old = {}
    for sig in STOP_SIGNALS:
        name = signal.Signals(sig).name
        old[sig] = signal.signal(sig, lambda signum, frame, name=name: watcher.trigger(f"{name} received"))
    return old


def run(cfg: RunConfig) -> int:
    """Run the suite; the process exit code."""
    boot = time.time()
    spool = Spool(cfg.spool)
    flush = spool.flush()
    for message in flush.unannounced:  # a hint lost, never a result: said, and the run goes on
        note(message)
    flush_note = (
        {"delivered": len(flush.delivered), "still_spooled": len(flush.failed)}
        if flush.delivered or flush.failed
        else None
    )
    store = SpoolingStore(open_store(cfg.results, write_once=True), spool)  # never overwrites: see layout
    identity = detect_identity()
    cfg.market = cfg.market or identity.lifecycle or ("spot" if cfg.stack.endswith("-spot") else "on-demand")
    price, warnings = price_row(cfg)
    if cfg.probe_seconds and cfg.benchmark:
        warnings.append("--probe-seconds applies to workloads only: the built-in benchmarks ran in full")
    watcher = PreemptionWatcher(cfg.watch_interval, cfg.deadline).start()
    old_handlers = _install_stop_handlers(watcher)
    ctx = SuiteContext(cfg, boot, identity, store, watcher, price, warnings, flush_note)
    codes = []
    try:
        for name in cfg.benchmark:
            code = Run(ctx, lambda run, name=name: BuiltinJob(run, name)).execute()
            codes.append(code)
            if code == exitcodes.INTERRUPTED:
                break  # the next boot resumes this one and runs the rest
        if cfg.workload:
            spec = load_spec(cfg.workload).with_environment(os.environ)
            codes.append(Run(ctx, lambda run: WorkloadJob(run, spec)).execute())
    finally:
        watcher.stop()
        for sig, handler in old_handlers.items():
            signal.signal(sig, handler)
    if store.stranded:
        where = ", ".join(map(str, spool.used_fallbacks)) or "stderr (LOST-FILE markers)"
        message = (
            f"{len(store.stranded)} file(s) are in neither the bucket nor the spool {spool.dir}: they are in {where}"
        )
        if spool.used_fallbacks:
            message += f"; deliver with `python -m payload flush --spool {spool.used_fallbacks[0]}`"
        note(message + (f"; lost: {', '.join(store.lost)}" if store.lost else ""))
        codes.append(exitcodes.STRANDED)
    if store.spooled and exitcodes.worst(codes) == exitcodes.OK:
        codes.append(exitcodes.SPOOLED)
    return exitcodes.worst(codes)
