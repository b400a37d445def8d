"""The server's own upkeep (issues 31, 27): every worker process runs one daemon thread
(arbor/asgi.py starts it) that

- drops from this process's path cache the sessions erased by any worker (it reads the
  erasure log past the last row it saw, every SWEEP_SECONDS): what was deleted does not
  stay in any worker's memory;
- offers to run each periodic job (PERIODIC) when its time comes in this process: every
  retention policy at least hourly (ARBOR_RETENTION_EVERY_SECONDS) and a purge after it,
  a purge on its own after deletions (ARBOR_PURGE_EVERY_SECONDS), outbox pruning
  (ARBOR_OUTBOX_PRUNE_EVERY_SECONDS) and auto-compaction retries
  (ARBOR_COMPACTION_RETRY_EVERY_SECONDS).

With several workers a job runs in one of them at a time: the one that holds its lock
(sessions_app/storage/jobs.py: a Postgres advisory lock, a file lock on SQLite); a worker that finds
it held skips that turn. Workers start at random points of the interval, so with N workers
a job runs about N times an interval, never twice at once; each run is idempotent.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction

from .. import models
from ..storage import erasure, jobs, purge
from . import retention, upkeep

log = logging.getLogger(__name__)

SWEEP_SECONDS = 5.0
RETENTION_EVERY = 3600.0
PURGE_EVERY = 300.0
OUTBOX_PRUNE_EVERY = 600.0
COMPACTION_RETRY_EVERY = 60.0


def policy_run() -> list[retention.Outcome]:
    """Every policy, each due session deleted in its own transaction, then a purge; nothing
    when another worker runs the policies now."""
    with jobs.exclusive("retention") as mine:
        if not mine:
            return []
        outcomes = retention.apply_all()
    if any(o.sessions for o in outcomes):  # (at once outside a transaction)
        transaction.on_commit(purge_run, robust=True)
    return outcomes


def purge_run(*, only_if_due: bool = False) -> None:
    if only_if_due and not models.Erasure.objects.filter(purged_at=None).exists():
        return
    with jobs.exclusive("purge") as mine:
        if mine:
            purge.purge()


def _run_alone(name: str, job: Callable[[], object]) -> Callable[[], object]:
    def run() -> None:
        with jobs.exclusive(name) as mine:
            if mine:
                job()
    return run


@dataclass
class Periodic:
    name: str
    setting: str  # seconds between runs, in settings
    default: float
    run: Callable[[], object]


PERIODIC = [
    Periodic("retention", "ARBOR_RETENTION_EVERY_SECONDS", RETENTION_EVERY,
             policy_run),
    Periodic("purge", "ARBOR_PURGE_EVERY_SECONDS", PURGE_EVERY,
             lambda: purge_run(only_if_due=True)),
    Periodic("outbox-prune", "ARBOR_OUTBOX_PRUNE_EVERY_SECONDS", OUTBOX_PRUNE_EVERY,
             _run_alone("outbox-prune", upkeep.prune_outbox)),
    Periodic("compaction-retry", "ARBOR_COMPACTION_RETRY_EVERY_SECONDS",
             COMPACTION_RETRY_EVERY, _run_alone("compaction-retry", upkeep.retry_compactions)),
]


class Worker:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._seen: int | None = None
        # The first run of each job at a random point of its first interval (spread
        # over the workers), but retention within the first sweeps as before.
        now = time.monotonic()
        self._next = {p.name: now + (0.0 if p.name == "retention"
                                     else random.uniform(0, _seconds(p.setting, p.default)))
                      for p in PERIODIC}

    def start(self) -> None:
        threading.Thread(target=self._run, name="arbor-lifecycle", daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            while not self._stop.wait(SWEEP_SECONDS):
                close_old_connections()
                try:
                    self.step()
                except DatabaseError:
                    log.warning("lifecycle upkeep failed; retrying", exc_info=True)
        finally:
            connection.close()
            jobs.close_connections()

    def step(self) -> None:
        self.sweep()
        for job in PERIODIC:
            if time.monotonic() < self._next[job.name]:
                continue
            every = _seconds(job.setting, job.default)
            self._next[job.name] = time.monotonic() + every * random.uniform(0.9, 1.1)
            try:
                job.run()
            except Exception:  # noqa: BLE001 - one job's failure must not stop the others
                log.warning("background job %s failed; it runs again in %.0f s",
                            job.name, every, exc_info=True)

    def sweep(self) -> None:
        """Forget this process's cached paths of sessions erased since the last look."""
        rows = models.Erasure.objects.order_by("id")
        if self._seen is None:  # paths cached before this start were read after them
            self._seen = rows.values_list("id", flat=True).last() or 0
            return
        found = list(rows.filter(id__gt=self._seen).values_list("id", "session_id"))
        if found:
            self._seen = found[-1][0]
            erasure.forget({sid for _, sid in found if sid})


def _seconds(name: str, default: float) -> float:
    return max(1.0, float(getattr(settings, name, default)))


_worker: Worker | None = None
_lock = threading.Lock()


def start() -> Worker | None:
    """This process's worker, once; ARBOR_LIFECYCLE_WORKER=0 leaves upkeep to the
    commands (apply_retention, purge)."""
    global _worker
    if os.environ.get("ARBOR_LIFECYCLE_WORKER", "1") == "0":
        return None
    with _lock:
        if _worker is None:
            _worker = Worker()
            _worker.start()
        return _worker
