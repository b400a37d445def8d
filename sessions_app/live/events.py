"""The engine's event sink on Django (SPEC §10): the only code that talks to the channel
layer.

`ChannelsSink.emit` runs inside the write's transaction (the engine opens it): one
statement numbers the event with the session's next `seq` (`Session.event_seq`, held until
commit, so two writers get consecutive numbers) and stores it in the outbox
(`SessionEvent`, storage/outbox.py); the frame is published after the commit. A write that rolls
back stores and publishes nothing. `message.delta` (ephemeral) has no seq and no row.
`session.deleted` is numbered like any event; its row goes with the session, the frame is
still published.

`events_after` is what a reconnecting client's `resume` reads.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import re
import threading
from functools import partial
from typing import Any, cast

import orjson
from asgiref.sync import SyncToAsync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.conf import settings
from django.db import connection, transaction

from memory_core.events import Event
from memory_core.messages import Message

log = logging.getLogger(__name__)

DEFAULT_RETENTION = 1000

_NOT_IN_GROUP_NAME = re.compile(r"[^A-Za-z0-9._-]")
MAX_GROUP_NAME = 99  # Channels refuses names of 100 characters or more

def session_group(session_id: str) -> str:
    """The Channels group of a session's subscribers: a valid group name for any id, and
    distinct for distinct ids (an id that had to be cut or changed gets its digest)."""
    name = "session." + session_id
    if len(name) <= MAX_GROUP_NAME and not _NOT_IN_GROUP_NAME.search(session_id):
        return name
    digest = hashlib.sha256(session_id.encode()).hexdigest()[:32]
    return f"session.{_NOT_IN_GROUP_NAME.sub('_', session_id)[:48]}.{digest}"


def retention() -> int:
    """Events kept per session (settings.ARBOR_EVENT_RETENTION, default 1000)."""
    return max(1, int(getattr(settings, "ARBOR_EVENT_RETENTION", DEFAULT_RETENTION)))


def frame_of(event: Event, seq: int | None) -> dict[str, Any]:
    frame: dict[str, Any] = {"type": event.type, "session_id": event.session_id}
    if seq is not None:
        frame["seq"] = seq
    frame["data"] = dict(event.data)
    return frame


_held = threading.local()


def hold() -> None:
    """Keep this thread's frames until `release()` (a request's, until its response is
    sent: the writer's answer then never waits behind the fan-out to its subscribers)."""
    release()  # anything an earlier request on this thread left
    _held.frames = []


def release() -> None:
    frames: list[dict[str, Any]] | None = getattr(_held, "frames", None)
    _held.frames = None
    if frames:
        _publish_now(frames)


def publish(frame: dict[str, Any]) -> None:
    frames: list[dict[str, Any]] | None = getattr(_held, "frames", None)
    if frames is not None:
        frames.append(frame)
    else:
        _publish_now([frame])


def _publish_now(frames: list[dict[str, Any]]) -> None:
    """Hand frames to the channel layer without waiting for them: writers never wait on
    the layer (a slow or absent Redis loses only the live copy; the outbox keeps it for
    `resume`). Frames of one process go out in the order they were handed over; a
    request's (a batch's thousand) are handed over at once."""
    try:
        loop = server_loop()
        if loop is None and isinstance(get_channel_layer(), InMemoryChannelLayer | None):
            # Its subscribers live on this process's server loop, which this thread is
            # not running for (a management command, a plain sync caller): nobody to tell.
            return
        _publisher(loop).submit(frames)
    except Exception:
        log.warning("could not publish %s of session %s", frames[0]["type"],
                    frames[0]["session_id"], exc_info=True)


MAX_PENDING = 10_000  # frames waiting for the layer; past it they are dropped (resume)


class _Publisher:
    """One per event loop: a queue drained in order by one task that sends to the layer."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.queue: asyncio.Queue[dict[str, Any]] | None = None

    def submit(self, frames: list[dict[str, Any]]) -> None:
        self.loop.call_soon_threadsafe(self._put, frames)

    def _put(self, frames: list[dict[str, Any]]) -> None:
        if self.queue is None:
            self.queue = asyncio.Queue(MAX_PENDING)
            self.loop.create_task(self._run(self.queue))
        for frame in frames:
            try:
                self.queue.put_nowait(frame)
            except asyncio.QueueFull:
                log.warning("event queue full: dropped %s of session %s (subscribers "
                            "resume)", frame["type"], frame["session_id"])

    async def _run(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        while True:
            frame = await queue.get()
            try:
                layer = get_channel_layer()
                if layer is not None:
                    await layer.group_send(session_group(frame["session_id"]),
                                           {"type": "arbor.event", "frame": frame})
            except Exception:
                log.warning("could not publish %s of session %s", frame["type"],
                            frame["session_id"], exc_info=True)


_publishers: dict[asyncio.AbstractEventLoop, _Publisher] = {}
_lock = threading.Lock()
_background: asyncio.AbstractEventLoop | None = None


def _publisher(loop: asyncio.AbstractEventLoop | None) -> _Publisher:
    """On the ASGI server's loop when this thread runs for it (sync_to_async), so in-memory
    subscribers on that loop are reached; else on one background loop of this process."""
    with _lock:
        if loop is None:
            loop = _background_loop()
        publisher = _publishers.get(loop)
        if publisher is None:
            for stale in [lp for lp in _publishers if lp.is_closed()]:
                del _publishers[stale]
            publisher = _publishers[loop] = _Publisher(loop)
        return publisher


_thread_loop = threading.local()


def use_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    """Publish this thread's frames on `loop` (a thread the server started, e.g. a chat
    turn run in the background, whose subscribers live on the server's loop)."""
    _thread_loop.loop = loop


def server_loop() -> asyncio.AbstractEventLoop | None:
    """The ASGI server's event loop when this thread serves it (or was bound to it with
    `use_loop`), else None."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        pass
    bound = getattr(_thread_loop, "loop", None)
    if bound is not None and bound.is_running():
        return cast(asyncio.AbstractEventLoop, bound)
    local = SyncToAsync.threadlocal
    loop = getattr(local, "main_event_loop", None)
    if (loop is not None and getattr(local, "main_event_loop_pid", None) == os.getpid()
            and loop.is_running()):
        return cast(asyncio.AbstractEventLoop, loop)
    return None


def _background_loop() -> asyncio.AbstractEventLoop:
    global _background
    if _background is None or _background.is_closed():
        loop = asyncio.new_event_loop()
        threading.Thread(target=loop.run_forever, name="arbor-events", daemon=True).start()
        _background = loop
    return _background


class ChannelsSink:
    """The only code that talks to the channel layer."""

    def emit(self, event: Event) -> None:
        if event.ephemeral:
            publish(frame_of(event, None))
            return
        if connection.in_atomic_block:
            seq = self._store(event)
        else:  # an emit outside the engine's transaction still numbers atomically
            with transaction.atomic():
                seq = self._store(event)
        if seq is None:  # no such session (any more): nothing to number, nobody to tell
            return
        # Rolled-back writes announce nothing; listeners that re-read find the row.
        transaction.on_commit(partial(publish, frame_of(event, seq)), robust=True)

    def emit_many(self, events: list[Event]) -> None:
        """A bulk write's events of one session, stored with one statement
        (storage/outbox.py store_many), published after the commit in order."""
        if len(events) < 2 or any(e.ephemeral or e.session_id != events[0].session_id
                                  for e in events):
            for event in events:
                self.emit(event)
            return
        from ..storage import outbox  # (imported late: the storage imports the models)

        held = contextlib.nullcontext() if connection.in_atomic_block else transaction.atomic()
        with held:
            seqs = outbox.store_many(events[0].session_id,
                                     [(e.type, _json(_by_reference(e))) for e in events],
                                     retention())
        if seqs is not None:
            frames = [frame_of(e, s) for e, s in zip(events, seqs, strict=True)]
            transaction.on_commit(lambda: [publish(f) for f in frames], robust=True)

    def _store(self, event: Event) -> int | None:
        from ..storage import outbox  # (imported late: the storage imports the models)

        return outbox.store(event.session_id, event.type, _json(_by_reference(event)),
                            retention())


# Message events name their message in the outbox rather than copy it (an append would
# store its content twice); `events_after` reads the messages back as they are then.
BY_REFERENCE = frozenset({"message.appended", "message.updated"})
REFERENCE = "message_ref"


def _by_reference(event: Event) -> Any:
    message = event.data.get("message") if event.type in BY_REFERENCE else None
    if not isinstance(message, dict) or not isinstance(message.get("id"), str):
        return event.data
    # message.appended's parent_id repeats the message's: it is read back with it.
    rest = {k: v for k, v in event.data.items()
            if k != "message" and not (k == "parent_id" and v == message.get("parent_id"))}
    return {REFERENCE: message["id"], **rest}


def _read_back(type_: str, data: dict[str, Any], message: Message) -> dict[str, Any]:
    """A stored message event's data, with its message as it is now."""
    full = message.to_dict()
    rest = {k: v for k, v in data.items() if k != REFERENCE}
    if type_ == "message.appended":
        rest.setdefault("parent_id", full["parent_id"])
    return {"message": full, **rest}


def _json(data: Any) -> str:
    return orjson.dumps(data, default=str).decode()


def events_after(session_id: str, after_seq: int) -> list[dict[str, Any]] | None:
    """The stored frames of a session with seq > after_seq, in seq order; None when some
    of them are gone (pruned past the retention, or the session itself): resync."""
    from ..storage import outbox

    rows = outbox.stored_after(session_id, after_seq)
    if rows is None:
        return None
    named = sorted({d[REFERENCE] for _, t, d in rows if t in BY_REFERENCE and REFERENCE in d})
    if named:
        found = outbox.messages(session_id, named)
        if len(found) < len(named):
            return None  # a message since deleted: re-read the history instead
        rows = [(seq, t, _read_back(t, d, found[d[REFERENCE]]))
                if t in BY_REFERENCE and REFERENCE in d else (seq, t, d)
                for seq, t, d in rows]
    return [{"type": type_, "session_id": session_id, "seq": seq, "data": data}
            for seq, type_, data in rows]
