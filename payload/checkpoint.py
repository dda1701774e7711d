"""Checkpoints in the bucket, and finding the one to resume from.

Under ``runs/<stack>/<run-id>/checkpoints/``: ``model-<steps>.npz`` (every model and optimizer variable,
copied to the host at the epoch boundary, packed and uploaded on a background thread) and ``state.json``
(what the harness needs to continue), each a new version (the instance may only create objects), the
model before the state that points at it. Models expire by the bucket's lifecycle rule on their tag.
"""

from __future__ import annotations

import io
import json
import time
from concurrent.futures import Future, ThreadPoolExecutor

from payload import frameworks
from payload.layout import newest_versions, stack_prefix, version_of, versioned
from payload.timestamps import iso

STATE_NAME = "state.json"
# S3 object tags on model files: the results bucket expires them after checkpointDays
# (infra/aws/component.py lifecycle rule), so a run abandoned mid-way leaves nothing for ever.
CHECKPOINT_TAGS = {"gpubench:kind": "checkpoint"}


def snapshot(model) -> tuple[list, list]:
    """Model and optimizer variables in host memory (milliseconds): packed while training goes on."""
    np = frameworks.numpy()
    weights = model.get_weights()
    opt = [np.asarray(v.numpy()) for v in model.optimizer.variables] if model.optimizer is not None else []
    return weights, opt


def pack(weights: list, opt: list) -> bytes:
    np = frameworks.numpy()
    buf = io.BytesIO()
    np.savez(buf, **{f"w{i}": a for i, a in enumerate(weights)}, **{f"o{i}": a for i, a in enumerate(opt)})
    return buf.getvalue()


def restore(model, blob: bytes) -> None:
    """Load a ``pack`` archive into a freshly built, compiled model."""
    np = frameworks.numpy()
    with np.load(io.BytesIO(blob)) as f:
        weights = [f[f"w{i}"] for i in range(sum(k.startswith("w") for k in f.files))]
        opt = [f[f"o{i}"] for i in range(sum(k.startswith("o") for k in f.files))]
    model.set_weights(weights)
    model.optimizer.build(model.trainable_variables)
    variables = list(model.optimizer.variables)
    if len(variables) != len(opt):
        raise ValueError(
            f"checkpoint has {len(opt)} optimizer variables, the model's optimizer "
            f"{len(variables)}: parameters changed since the checkpoint?"
        )
    for var, value in zip(variables, opt):
        var.assign(value)


def _states(store, stack: str, run_prefix: str = ""):
    """The newest checkpoint state of every run of `stack` whose id starts with `run_prefix`, broken ones left out."""
    listing = store.list(stack_prefix(stack) + run_prefix)
    keys = [i.key for i in listing if version_of(i.key)[0].endswith(f"/checkpoints/{STATE_NAME}")]
    for key in sorted(newest_versions(keys).values()):
        try:
            state = json.loads(store.get_bytes(key))
        except Exception:  # noqa: BLE001
            continue
        if isinstance(state, dict):
            yield state


def find_resumable(store, stack: str, fingerprint: str, run_prefix: str = "") -> dict | None:
    """Newest incomplete checkpoint state of this fingerprint among the runs whose id starts with `run_prefix`
    (a launch's own: the only ones its instance may write to), or None."""
    best = None
    for state in _states(store, stack, run_prefix):
        if state.get("fingerprint") != fingerprint or state.get("complete"):
            continue
        if not state.get("model_key") or not store.exists(state["model_key"]):
            continue
        if best is None or state.get("saved_at", "") > best.get("saved_at", ""):
            best = state
    return best


def find_completed(store, stack: str, fingerprint: str, deployment: float | None) -> dict | None:
    """A completed run of this fingerprint in the same deployment (one `pulumi up`, whose deadline every
    instance it boots shares), so a spot replacement does not pay twice; None without a deadline."""
    if deployment is None:
        return None
    for state in _states(store, stack):
        if state.get("fingerprint") == fingerprint and state.get("complete") and state.get("deployment") == deployment:
            return state
    return None


def mark_complete(store, writer, state: dict) -> None:
    """A completed state: nothing resumes the run, and a spot replacement of its deployment does not run it
    again (find_completed)."""
    state = {**state, "complete": True, "saved_at": iso(), "model_key": None}
    store.put_bytes(writer.next_key(f"checkpoints/{STATE_NAME}"), json.dumps(state).encode(), "application/json")


class Checkpointer:
    """Saves model + state to ``<writer.prefix>checkpoints/`` asynchronously, each under new names."""

    def __init__(self, store, writer, timeline=None):
        self.store, self.writer, self.dir = store, writer, writer.prefix + "checkpoints/"
        self.timeline = timeline
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpubench-ckpt")
        self._pending: Future | None = None
        self.errors: list[str] = []

    def save(self, model, state: dict, tag: int, sync: bool = False) -> None:
        """Snapshot now (the model keeps training); pack and upload in the background."""
        t0 = time.perf_counter()
        self.wait()  # at most one upload in flight
        weights, opt = snapshot(model)
        snapshot_s = time.perf_counter() - t0
        self._pending = self._pool.submit(self._upload, weights, opt, dict(state), tag, snapshot_s)
        if sync:
            self.wait()

    def _upload(self, weights: list, opt: list, state: dict, tag: int, snapshot_s: float) -> None:
        t0 = time.perf_counter()
        blob = pack(weights, opt)
        state_key = self.writer.next_key(f"checkpoints/{STATE_NAME}")  # model and state: new names, one version
        key = self.dir + versioned(f"model-{tag:09d}.npz", *version_of(state_key)[1])
        state.update(model_key=key, saved_at=iso())
        ok = self.store.put_bytes(key, blob, "application/octet-stream", tags=CHECKPOINT_TAGS) is not False
        ok = self.store.put_bytes(state_key, json.dumps(state).encode(), "application/json") is not False and ok
        if self.timeline is not None:
            self.timeline.add(
                "checkpoint",
                key=key,
                bytes=len(blob),
                uploaded=ok,
                snapshot_seconds=round(snapshot_s, 4),
                pack_upload_seconds=round(time.perf_counter() - t0, 3),
            )

    def wait(self) -> None:
        if self._pending is not None:
            try:
                self._pending.result()
            except Exception as exc:  # noqa: BLE001
                self.errors.append(f"checkpoint upload failed: {exc}")
            self._pending = None

    def close(self) -> None:
        self.wait()
        self._pool.shutdown(wait=True)
