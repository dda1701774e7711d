"""Spot / preemption watcher: a daemon thread that sets ``notice`` (an Event: free to read every step).

Polled every ``interval`` s (AWS gives two minutes' notice, GCE about 30 s): AWS IMDSv2
``spot/instance-action`` (404: none), GCE ``instance/preempted`` (TRUE), and the run deadline less a
margin (so a run checkpoints before the cloud-side deadline); ``trigger()`` serves the stop signals.
A metadata source that never answered is dropped at its first failure (not this cloud); one that
answered keeps being polled through transient errors.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable

from payload.identity import AwsImds, GceMetadata, MetadataUnavailable


def aws_spot_notice(imds: AwsImds) -> str | None:
    body = imds.get("spot/instance-action")
    if not body:
        return None
    try:
        info = json.loads(body)
        return f"aws spot instance-action: {info.get('action')} at {info.get('time')}"
    except ValueError:
        return f"aws spot instance-action: {body.strip()[:200]}"


def gce_preempted_notice(md: GceMetadata) -> str | None:
    value = (md.get("instance/preempted") or "").strip().upper()
    return "gce instance/preempted is TRUE" if value == "TRUE" else None


class PreemptionWatcher:
    """Polls the notice sources in a daemon thread; ``notice`` is set on the first notice."""

    def __init__(
        self,
        interval: float = 5.0,
        deadline: float | None = None,
        deadline_margin: float = 300.0,
        sources: list[tuple[str, Callable[[], str | None]]] | None = None,
        clock: Callable[[], float] = time.time,
    ):
        self.interval = interval
        self.deadline, self.deadline_margin = deadline, deadline_margin
        self.clock = clock
        if sources is None:
            imds, gce = AwsImds(), GceMetadata()
            sources = [("aws", lambda: aws_spot_notice(imds)), ("gce", lambda: gce_preempted_notice(gce))]
        self._sources = list(sources)
        self._answered: set[str] = set()
        self.notice = threading.Event()
        self.reason: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="gpubench-preemption-watcher", daemon=True)

    def start(self) -> PreemptionWatcher:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def trigger(self, reason: str) -> None:
        if not self.notice.is_set():
            self.reason = reason
            self.notice.set()

    def poll_once(self) -> str | None:
        """One round over all sources; returns the notice text if any."""
        if self.deadline is not None and self.clock() >= self.deadline - self.deadline_margin:
            return f"run deadline {self.deadline:.0f} is less than {self.deadline_margin:.0f}s away"
        for name, check in list(self._sources):
            try:
                text = check()
                self._answered.add(name)
            except MetadataUnavailable:
                if name not in self._answered:
                    self._sources.remove((name, check))  # not on this cloud
                continue
            if text:
                return text
        return None

    def _run(self) -> None:
        while not self._stop.is_set() and not self.notice.is_set():
            text = self.poll_once()
            if text:
                self.trigger(text)
                return
            self._stop.wait(self.interval)
