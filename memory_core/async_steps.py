"""A chat turn driven from async code (Session.achat, aregenerate): off the shared sync
thread, since a model call can take a minute and every other thread-sensitive call of the
process would wait behind it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from asgiref.sync import SyncToAsync, sync_to_async

from .chat import Ask, run_turn, stream_turn

if TYPE_CHECKING:
    from .host import SessionHost

_DONE = object()


async def aturn(session: SessionHost, ask: Ask, *, stream: bool) -> Any:
    """The stored final message; with stream=True an async iterator of the turn's events.
    Either way the worker thread's database connection is released afterwards."""
    if stream:
        return aiterate(stream_turn(session, ask), session.storage.release)

    def run() -> Any:
        try:
            return run_turn(session, ask)
        finally:
            session.storage.release()  # e.g. close this worker thread's connection

    return await sync_to_async(run, thread_sensitive=False)()


async def aiterate(events: Iterator[Any], release: Callable[[], None]) -> AsyncIterator[Any]:
    """Each step of `events` in one dedicated worker thread, then `release()` there.
    (A StopIteration cannot cross an await, hence the sentinel.)"""
    with ThreadPoolExecutor(max_workers=1) as worker:  # one thread: one DB connection
        step = SyncToAsync(lambda: next(events, _DONE), thread_sensitive=False, executor=worker)
        try:
            while (item := await step()) is not _DONE:
                yield item
        finally:
            await SyncToAsync(release, thread_sensitive=False, executor=worker)()
