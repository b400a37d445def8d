"""The background worker: embeds new and edited messages so a write never waits for a
model. One daemon thread per server process (arbor/asgi.py starts it), and one of them at
a time embeds: the one holding the embedding lock (lock.py: a Postgres advisory lock, a
file lock on SQLite); the others try for it every POLL_SECONDS and take over when its
holder stops or dies. (Were two to embed, a vector stored twice is kept once.)

It polls for messages past the last seq it read (one index range, every POLL_SECONDS),
and every SWEEP_SECONDS looks again from the first message, for edits (their trigger
dropped the vector) and for a changed model. When the embedder fails it waits, doubling
from 1 s up to MAX_BACKOFF_SECONDS, and tries the same messages again.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from memory_core.embedding import EmbedderUnavailable, WrongDimension

from . import config
from .embed import embed_batch
from .lock import Leader

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
SWEEP_SECONDS = 60.0
MAX_BACKOFF_SECONDS = 60.0


class Worker:
    def __init__(self, *, poll: float = POLL_SECONDS, sweep: float = SWEEP_SECONDS,
                 max_backoff: float = MAX_BACKOFF_SECONDS) -> None:
        self.poll = poll
        self.sweep = sweep
        self.max_backoff = max_backoff
        self.failures = 0  # in a row; the status says the embedder is failing while > 0
        self.last_error = ""
        self.leader = Leader()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="arbor-embed", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        after, model, swept = 0, None, time.monotonic()
        try:
            while not self._stop.is_set():
                after, model, swept = self._step(after, model, swept)
        finally:
            self.leader.release()
            connection.close()

    def _step(self, after: int, model: str | None, swept: float) -> tuple[int, str | None, float]:
        close_old_connections()
        embedder = config.embedder()
        if embedder is None:
            self._stop.wait(self.poll)
            return 0, None, swept
        if not self.leader.acquire():  # another worker embeds
            self._stop.wait(self.poll)
            return 0, None, swept
        if embedder.model != model or time.monotonic() - swept > self.sweep:
            after, model, swept = 0, embedder.model, time.monotonic()
        try:
            read, last = embed_batch(embedder, after=after)
        except (EmbedderUnavailable, WrongDimension, DatabaseError) as exc:
            self.failures += 1
            self.last_error = str(getattr(exc, "detail", exc))[:300]
            delay = min(self.max_backoff, 2.0 ** (self.failures - 1))
            log.warning("embedding failed (%s); retrying in %.0f s", self.last_error, delay)
            self._stop.wait(delay)
            return after, model, swept
        self.failures, self.last_error = 0, ""
        if not read:
            self._stop.wait(self.poll)
        return last, model, swept


_worker: Worker | None = None
_start_lock = threading.Lock()


def start() -> Worker | None:
    """Start this process's worker once, unless ARBOR_EMBEDDINGS_WORKER is off."""
    global _worker
    if not getattr(settings, "ARBOR_EMBEDDINGS_WORKER", True):
        return None
    with _start_lock:
        if _worker is None:
            _worker = Worker()
            _worker.start()
        return _worker


def current() -> Worker | None:
    return _worker
