"""The live-events WebSocket, `/ws/sessions/{id}/` (SPEC §10).

One consumer per connection. It authorises the caller (an API key in the `Authorization`
header or `?token=`, else the browser's login session), joins the worker's hub for the
session (`fanout.py`: one layer subscription per worker, not per socket) and forwards
every event to the client **in `seq` order**: with several workers two
after-commit publishes can arrive swapped, so a frame past a gap is held back briefly
while the gap is filled from the outbox (`events_after`); nothing is dropped or reordered,
duplicates are skipped. Client frames (SPEC §13): `subscribe`, `resume`, `ping`; anything
else gets an error event and the connection stays open.

Refusals: a session the caller may not see is answered exactly as a missing one — the
socket is accepted, gets `{"type": "error", "code": "not_found", ...}` and is closed with
4404. No credentials: `unauthorized`, 4401. A browser Origin that is not an allowed host
is refused at the handshake (`OriginValidator`, in routing). No database connection free
in time (db_pool.py): `unavailable`, and at connect the socket is closed with 4503; a
client frame that needed the database gets the error and the socket stays.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.db import OperationalError

from memory_core import NotFound

from .. import db_pool, models
from ..access import session_row_for
from ..auth import Principal, principal_for_key
from .events import events_after
from .fanout import hub

CLOSE_UNAUTHORIZED = 4401
CLOSE_NOT_FOUND = 4404
HOLD_BACK_SECONDS = 0.2  # how long a frame past a gap waits for the missing ones
GAP_FILL_ATTEMPTS = 5  # outbox reads before giving up on a gap and asking for a resync
TAIL_CHECK_SECONDS = 0.5  # quiet time after a burst before checking that none was dropped
MAX_FRAME_CHARS = 64 * 1024  # client frames are tiny; anything larger is refused
INBOX_FRAMES = 1000  # live frames waiting for this socket; past it they are dropped


def header(scope: dict[str, Any], name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


def key_from_scope(scope: dict[str, Any]) -> str | None:
    """The API key the client sent: `Authorization: Bearer <key>`, else `?token=<key>`."""
    authorization = header(scope, b"authorization")
    if authorization:
        scheme, _, value = authorization.partition(" ")
        if scheme.lower() == "bearer" and value.strip():
            return value.strip()
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    tokens = query.get("token")
    return tokens[0].strip() if tokens and tokens[0].strip() else None


@database_sync_to_async
def _principal_for_key(raw: str) -> Principal | None:
    return principal_for_key(raw)


@database_sync_to_async
def _agent_of(principal: Principal, session_id: str) -> str | None:
    """The agent of the principal's session with this id; None when it may not see it."""
    try:
        return str(session_row_for(principal, session_id).agent_id)
    except NotFound:
        return None


@database_sync_to_async
def _current_seq(session_id: str) -> int | None:
    row = models.Session.objects.filter(id=session_id).values_list("event_seq", flat=True)
    seq = row.first()
    return None if seq is None else int(seq)


_events_after = database_sync_to_async(events_after)


def _error(code: str, detail: str) -> dict[str, Any]:
    return {"type": "error", "code": code, "detail": detail}


def _busy(exc: OperationalError, what: str) -> None:
    """Logs a read that got no connection in time (the caller then says so or skips it);
    any other database error is raised again."""
    if not db_pool.no_connection(exc):
        raise exc
    db_pool.refused(what)


def _is_seq(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


class SessionConsumer(AsyncWebsocketConsumer):
    """Forwards one session's events to one client, in `seq` order."""

    session_id: str
    joined = False
    accepted = False
    drain_task: asyncio.Task[None] | None = None
    page_agent: str | None = None  # a browser tab: it gets message events rendered (fanout)

    async def connect(self) -> None:
        try:
            await self._connect()
        except OperationalError as exc:
            _busy(exc, f"WebSocket {self.scope.get('path', '')}")
            if not self.accepted:
                await self.accept()
            await self._refuse(db_pool.CODE, db_pool.DETAIL, db_pool.WS_CLOSE_CODE)

    async def accept(self, subprotocol: str | None = None,
                     headers: list[tuple[bytes, bytes]] | None = None) -> None:
        await super().accept(subprotocol, headers)
        self.accepted = True

    async def _connect(self) -> None:
        self.session_id = str(self.scope["url_route"]["kwargs"]["session_id"])
        self.last_seq = 0  # the last seq this client has (sent, or told by resume)
        self.pending: dict[int, dict[str, Any]] = {}  # frames held back past a gap
        self.gap_task: asyncio.Task[None] | None = None
        self.tail_task: asyncio.Task[None] | None = None
        self.last_frame_at = 0.0
        self.inbox: asyncio.Queue[tuple[dict[str, Any], str]] = asyncio.Queue(INBOX_FRAMES)
        self.lock = asyncio.Lock()
        principal = await self._principal()
        await self.accept()
        if principal is None:
            await self._refuse("unauthorized", "an API key or a login is required",
                               CLOSE_UNAUTHORIZED)
            return
        agent_id = await _agent_of(principal, self.session_id)
        if agent_id is None:
            await self._refuse("not_found", f"session {self.session_id} not found",
                               CLOSE_NOT_FOUND)
            return
        if principal.door == "ui":
            self.page_agent = agent_id
        await self._subscribe()

    async def _principal(self) -> Principal | None:
        """A key decides when one is sent (a wrong key is refused, not ignored); otherwise
        the login session, and only for a browser (one that sent an allowed Origin)."""
        raw = key_from_scope(self.scope)
        if raw is not None:
            return await _principal_for_key(raw)
        user = self.scope.get("user")
        if user is not None and user.is_authenticated and user.is_active \
                and header(self.scope, b"origin") is not None:
            return Principal(user_id=user.pk, door="ui")
        return None

    async def _refuse(self, code: str, detail: str, close_code: int) -> None:
        await self._send(_error(code, detail))
        await self.close(code=close_code)

    async def _subscribe(self) -> None:
        """Join the hub first, then read the current seq: an event committed in between
        is then both counted and delivered, and skipped as a duplicate — never missed."""
        if not self.joined:
            await hub().join(self.session_id, self)
            self.joined = True
            self.last_seq = await _current_seq(self.session_id) or 0
            self.drain_task = asyncio.ensure_future(self._drain())
        await self._send({"type": "subscribed", "session_id": self.session_id,
                          "last_seq": self.last_seq})

    async def disconnect(self, code: int) -> None:
        for task in (self.gap_task, self.tail_task, self.drain_task):
            if task is not None:
                task.cancel()
        if self.joined:
            await hub().leave(self.session_id, self)
            self.joined = False

    # --- client frames ------------------------------------------------------------

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if text_data is None:
            await self._send(_error("bad_frame", "frames are JSON text, not binary"))
            return
        if len(text_data) > MAX_FRAME_CHARS:
            await self._send(_error("bad_frame", f"frames are at most {MAX_FRAME_CHARS} characters"))
            return
        try:
            frame = json.loads(text_data)
        except ValueError:
            await self._send(_error("bad_frame", "a frame must be JSON"))
            return
        if not isinstance(frame, dict):
            await self._send(_error("bad_frame", "a frame must be a JSON object"))
            return
        try:
            await self._act(frame)
        except OperationalError as exc:
            _busy(exc, f"WebSocket frame {str(frame.get('action'))[:50]!r}")
            await self._send(_error(db_pool.CODE, db_pool.DETAIL))

    async def _act(self, frame: dict[str, Any]) -> None:
        action = frame.get("action")
        if action == "ping":
            await self._send({"type": "pong"})
        elif action == "subscribe":
            await self._subscribe()
        elif action == "resume":
            after_seq = frame.get("after_seq")
            if not _is_seq(after_seq):
                await self._send(_error("invalid", "after_seq must be a non-negative integer"))
                return
            await self._resume(after_seq)
        elif isinstance(action, str):
            await self._send(_error("unknown_action",
                                    f"unknown action {action[:50]!r}; "
                                    "expected subscribe, resume or ping"))
        else:
            await self._send(_error("bad_frame", "a frame needs an \"action\" string"))

    async def _resume(self, after_seq: int) -> None:
        """Everything stored after `after_seq`, in order, then live frames as they come."""
        async with self.lock:
            current = await _current_seq(self.session_id)
            frames = None if current is None or after_seq > current \
                else await _events_after(self.session_id, after_seq)
            if frames is None:
                await self._resync(current)
                return
            self.last_seq = after_seq
            for frame in frames:
                await self._offer(frame)
            await self._flush()

    async def _resync(self, current: int | None) -> None:
        """The client must re-read history; live frames continue after what it reads."""
        self.last_seq = max([current or 0, *self.pending])
        self.pending.clear()
        await self._send({"type": "resync"})

    # --- live events --------------------------------------------------------------

    def deliver(self, frame: dict[str, Any], text: str) -> None:
        """From the hub: queue without waiting; a full queue drops the frame, which the
        gap fill or the tail check then reads from the outbox."""
        try:
            self.inbox.put_nowait((frame, text))
        except asyncio.QueueFull:
            pass

    async def _drain(self) -> None:
        while True:
            frame, text = await self.inbox.get()
            async with self.lock:
                await self._offer(frame, text)
                await self._flush()
                if frame.get("type") == "session.deleted" and "seq" in frame:
                    await self.close(code=CLOSE_NOT_FOUND)
                    return
            if "seq" in frame:
                self.last_frame_at = asyncio.get_running_loop().time()
                if self.tail_task is None:
                    self.tail_task = asyncio.ensure_future(self._check_tail())

    async def _offer(self, frame: dict[str, Any], text: str | None = None) -> None:
        """Send a frame now if it is next, hold it if it is past a gap, skip a duplicate."""
        seq = frame.get("seq")
        if seq is None:  # ephemeral (message.delta): no place in the order
            await self._send(frame, text)
        elif seq == self.last_seq + 1:
            await self._send(frame, text)
            self.last_seq = seq
        elif seq > self.last_seq:
            self.pending[seq] = frame

    async def _send_ready(self) -> None:
        """Send the held frames that are now next in order."""
        while self.last_seq + 1 in self.pending:
            frame = self.pending.pop(self.last_seq + 1)
            await self._send(frame)
            self.last_seq = frame["seq"]

    async def _flush(self) -> None:
        """Send the held frames that are now next; wait for a remaining gap, then fill it."""
        await self._send_ready()
        for seq in [s for s in self.pending if s <= self.last_seq]:
            del self.pending[seq]
        if self.pending and self.gap_task is None:
            self.gap_task = asyncio.ensure_future(self._fill_gap())

    async def _fill_gap(self) -> None:
        """After a short wait for the missing frames to arrive live, read them from the
        outbox (a write's seq is committed before its publish, so they are there)."""
        try:
            for _ in range(GAP_FILL_ATTEMPTS):
                await asyncio.sleep(HOLD_BACK_SECONDS)
                async with self.lock:
                    if not self.pending:
                        return
                    frames = await _events_after(self.session_id, self.last_seq)
                    if frames is None:  # pruned past retention
                        await self._resync(await _current_seq(self.session_id))
                        return
                    for frame in frames:
                        await self._offer(frame)
                    await self._send_ready()
                    if not self.pending:
                        return
            async with self.lock:  # the outbox never filled it: the client must re-read
                if self.pending:
                    await self._resync(await _current_seq(self.session_id))
        except OperationalError as exc:
            _busy(exc, "a gap fill")  # the frames stay held; the next one tries again
        finally:
            self.gap_task = None

    async def _check_tail(self) -> None:
        """A full channel queue drops frames for this consumer (bounded buffers); a dropped
        frame in the middle shows as a gap, a dropped tail shows nothing. So once a burst
        has gone quiet, one look at the session's seq (a primary-key read) catches it."""
        loop = asyncio.get_running_loop()
        try:
            while (wait := self.last_frame_at + TAIL_CHECK_SECONDS - loop.time()) > 0:
                await asyncio.sleep(wait)
            current = await _current_seq(self.session_id)
            async with self.lock:
                if current is None or current <= self.last_seq or self.pending:
                    return  # up to date, or a gap fill is already under way
                frames = await _events_after(self.session_id, self.last_seq)
                if frames is None:
                    await self._resync(current)
                    return
                for frame in frames:
                    await self._offer(frame)
                await self._flush()
        except OperationalError as exc:
            _busy(exc, "a tail check")  # the next burst checks again
        finally:
            self.tail_task = None

    async def _send(self, frame: dict[str, Any], text: str | None = None) -> None:
        await self.send(text_data=text or json.dumps(frame, separators=(",", ":")))
