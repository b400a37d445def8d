"""One channel-layer subscription per worker and session, fanned out to its sockets.

Joining a session's group once per WebSocket would cost one layer message per subscriber
per event: with Redis, one pop each from the worker's shared inbox, which a burst to a
hundred subscribers overflows (its capacity counts them all). Instead each worker process
has one `Hub` per event loop. It joins a session's group while at least one local socket
watches that session, receives each event once, serialises it once, and hands it to each
local socket without waiting (`deliver` only queues; a socket whose queue is full loses the
frame and fills it from the outbox later), so one slow socket never holds up the others.

Browser tabs among the local sockets get message events with the message rendered as the
page shows it (`html`, fragments.py): rendered here once per event, not fetched by each
tab.

Group membership is renewed every `RENEW_SECONDS` (channels_redis forgets a member after
`group_expiry`, a day) and after the layer failed (a restarted Redis forgot every group).
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any, Protocol

from channels.db import database_sync_to_async
from channels.layers import BaseChannelLayer, get_channel_layer

from .events import session_group
from .fragments import RENDERED, message_html

log = logging.getLogger(__name__)
RENEW_SECONDS = 3600.0
RETRY_SECONDS = 1.0


class Subscriber(Protocol):
    # A browser tab: the agent of its session (it is sent message events rendered);
    # None for an agent's socket (it is sent the frames as they are).
    page_agent: str | None

    def deliver(self, frame: dict[str, Any], text: str) -> None:
        """Take one frame (and its JSON text) without blocking."""


_render = database_sync_to_async(message_html)


class Hub:
    def __init__(self, layer: BaseChannelLayer) -> None:
        self.layer = layer
        self.channel: str | None = None
        self.local: dict[str, set[Subscriber]] = {}
        self.lock = asyncio.Lock()  # joins and leaves change group membership in order
        self.tasks: list[asyncio.Task[None]] = []

    async def join(self, session_id: str, subscriber: Subscriber) -> None:
        async with self.lock:
            if self.channel is None:
                # The default prefix: channels_redis reads a process's channels from one
                # Redis key per prefix, and the consumers' own channels use this one.
                self.channel = await self.layer.new_channel()
                self.tasks = [asyncio.ensure_future(self._receive()),
                              asyncio.ensure_future(self._renew_every(RENEW_SECONDS))]
            members = self.local.setdefault(session_id, set())
            if not members:
                await self.layer.group_add(session_group(session_id), self.channel)
            members.add(subscriber)

    async def leave(self, session_id: str, subscriber: Subscriber) -> None:
        async with self.lock:
            members = self.local.get(session_id)
            if members is None or subscriber not in members:
                return
            members.discard(subscriber)
            if not members:
                del self.local[session_id]
                if self.channel is not None:
                    try:
                        await self.layer.group_discard(session_group(session_id), self.channel)
                    except Exception:  # the layer is down; the membership expires there
                        log.warning("could not leave the group of session %s", session_id)

    def watched(self, session_id: str) -> int:
        return len(self.local.get(session_id, ()))

    async def _receive(self) -> None:
        assert self.channel is not None
        while True:
            try:
                message = await self.layer.receive(self.channel)
            except asyncio.CancelledError:
                raise
            except Exception:
                log.warning("live events: the channel layer failed; retrying", exc_info=True)
                await asyncio.sleep(RETRY_SECONDS)
                await self._renew()
                continue
            frame = message.get("frame")
            self.dispatch(frame, await self._rendered(frame))

    async def _rendered(self, frame: Any) -> str | None:
        """The frame's message as a tab shows it, when a local tab watches its session."""
        if not isinstance(frame, dict) or frame.get("type") not in RENDERED:
            return None
        members = self.local.get(str(frame.get("session_id")), ())
        agent = next((m.page_agent for m in members if m.page_agent is not None), None)
        if agent is None:
            return None
        try:
            return await _render(frame, agent)
        except Exception:  # the tabs fetch the fragment themselves, as from the outbox
            log.warning("could not render %s of session %s", frame.get("type"),
                        frame.get("session_id"), exc_info=True)
            return None

    def dispatch(self, frame: Any, html: str | None = None) -> None:
        if not isinstance(frame, dict):
            return
        members = self.local.get(str(frame.get("session_id")))
        if not members:
            return
        text = json.dumps(frame, separators=(",", ":"))
        page_frame, page_text = frame, text
        if html is not None:
            page_frame = {**frame, "html": html}
            page_text = json.dumps(page_frame, separators=(",", ":"))
        for subscriber in list(members):
            if subscriber.page_agent is None:
                subscriber.deliver(frame, text)
            else:
                subscriber.deliver(page_frame, page_text)

    async def _renew(self) -> None:
        async with self.lock:
            for session_id in list(self.local):
                try:
                    await self.layer.group_add(session_group(session_id), self.channel)
                except Exception:
                    log.warning("could not renew the group of session %s", session_id)
                    return

    async def _renew_every(self, seconds: float) -> None:
        while True:
            await asyncio.sleep(seconds)
            await self._renew()


_hubs: dict[asyncio.AbstractEventLoop, Hub] = {}


def hub() -> Hub:
    """This event loop's hub (one per server process; tests run several loops)."""
    loop = asyncio.get_running_loop()
    current = _hubs.get(loop)
    layer = get_channel_layer()
    if current is None or current.layer is not layer:
        for stale in [lp for lp in _hubs if lp.is_closed()]:
            del _hubs[stale]
        current = _hubs[loop] = Hub(layer)
    return current
