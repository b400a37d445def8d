"""The server's own upkeep (issue 31): every worker process runs one daemon thread
(arbor/asgi.py starts it) that

- drops from this process's path cache the sessions erased by any worker (it reads the
  erasure log past the last row it saw, every SWEEP_SECONDS): what was deleted does not
  stay in any worker's memory;
- applies every retention policy at least hourly (ARBOR_RETENTION_EVERY_SECONDS) and
  purges after it, and purges on its own after deletions (ARBOR_PURGE_EVERY_SECONDS).

With several workers only one runs a policy run or a purge: the one that moves the
lease's `next_at` on (a row of arbor_lifecycle_lease, changed under SQLite's write lock
or Postgres' row lock), and on Postgres the run also holds a transaction-level advisory
lock (pg_try_advisory_xact_lock: pooled connections must not keep a session-level one).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection, transaction
from django.utils import timezone

from .. import models
from ..storage import erasure, purge
from . import retention

log = logging.getLogger(__name__)

SWEEP_SECONDS = 5.0
RETENTION_EVERY = 3600.0
PURGE_EVERY = 300.0
LOCK_KEY = 0x4152424F52  # "ARBOR": the advisory lock of lifecycle runs


def claim(name: str, every: float) -> bool:
    """Whether this worker runs `name` now: it moves the lease's next_at on by `every`
    when that time has come (one UPDATE, so two workers cannot both move it)."""
    now = timezone.now()
    with transaction.atomic():
        models.LifecycleLease.objects.get_or_create(name=name, defaults={"next_at": now})
        return bool(models.LifecycleLease.objects.filter(name=name, next_at__lte=now)
                    .update(next_at=now + timedelta(seconds=every)))


@contextmanager
def exclusive() -> Iterator[bool]:
    """True when no other worker runs lifecycle upkeep now (Postgres: a transaction-level
    advisory lock, held while the body runs in that transaction; SQLite: the lease,
    claimed under the write lock, is the exclusion)."""
    if connection.vendor != "postgresql":
        yield True
        return
    with transaction.atomic(), connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_xact_lock(%s)", [LOCK_KEY])
        yield bool(cur.fetchone()[0])


def policy_run() -> list[retention.Outcome]:
    """Every policy, then a purge (each session deleted in its own transaction or, on
    Postgres, its own savepoint inside the locked run)."""
    outcomes: list[retention.Outcome] = []
    with exclusive() as mine:
        if mine:
            outcomes = retention.apply_all()
    if any(o.sessions for o in outcomes):
        purge.purge_after_commit()
    return outcomes


class Worker:
    def __init__(self) -> None:
        self._stop = threading.Event()
        self._seen: int | None = None

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

    def step(self) -> None:
        self.sweep()
        if claim("retention", _seconds("ARBOR_RETENTION_EVERY_SECONDS", RETENTION_EVERY)):
            policy_run()
        if (models.Erasure.objects.filter(purged_at=None).exists()
                and claim("purge", _seconds("ARBOR_PURGE_EVERY_SECONDS", PURGE_EVERY))):
            purge.purge()

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
