"""One turn at a time per session, whichever door starts it (pages, JSON API, MCP,
Python): the claim a chat turn, or a compaction started by hand, holds while it runs.
A second start meets Conflict and stores nothing.

The claim is one conditional UPDATE of the session row (storage.claim_turn): of two
simultaneous starts exactly one wins, on either database. The turn refreshes it every
HEARTBEAT_SECONDS while it works and gives it back when it ends: done, stopped or failed.
A turn whose process died cannot give it back, so a claim is also free when:

- its holder is provably gone: a process of this host that is no longer running (a
  restarted server), or this very process with no such turn running; or
- it has not been refreshed for TURN_LEASE_SECONDS (a holder on another host), longer
  than one model call or tool may take between two refreshes.

Reads show such a session's status as "error" (shown_status): its turn did not finish.
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from . import events
from .errors import Conflict
from .messages import now

if TYPE_CHECKING:
    from .events import Status
    from .host import SessionHost

BUSY: tuple[str, ...] = ("thinking", "compacting")
TURN_LEASE_SECONDS = 300.0
HEARTBEAT_SECONDS = 5.0

_HOST = socket.gethostname().replace(":", "_")
_PROCESS = uuid.uuid4().hex[:12]  # this process, even under a pid a dead one had
_running: set[str] = set()  # the claims this process's turns hold now
_lock = threading.Lock()


def _new_turn_id() -> str:
    return f"{_HOST}:{os.getpid()}:{_PROCESS}:{uuid.uuid4().hex}"


def _pid_running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # someone else's process: it exists
        return True
    return True


def holder_gone(turn_id: str | None) -> bool:
    """Whether the turn holding a claim provably no longer runs (see the module's doc);
    False when that cannot be known from here."""
    if not turn_id:
        return False
    parts = turn_id.split(":")
    if len(parts) != 4 or parts[0] != _HOST or not parts[1].isdigit():
        return False
    pid, process = int(parts[1]), parts[2]
    if pid == os.getpid():
        if process != _PROCESS:
            return True  # a process that had our pid before us
        with _lock:
            return turn_id not in _running
    return not _pid_running(pid)


def lease_cutoff() -> datetime:
    """Claims last refreshed before this are stale."""
    return now() - timedelta(seconds=TURN_LEASE_SECONDS)


def shown_status(status: str, seen_at: datetime | None) -> str:
    """The status to show: a busy status nobody has refreshed within the lease belongs
    to a turn that died, so it shows as "error" (and the page lets the user go on)."""
    if status in BUSY and _stale(seen_at):
        return "error"
    return status


def _stale(seen_at: datetime | None) -> bool:
    return seen_at is None or seen_at < lease_cutoff()


def claim(session: SessionHost, status: Status) -> str:
    """Take the session for a turn (status: "thinking", or "compacting"), store and
    announce the status; returns the claim's id. Raises Conflict when a turn holds it,
    NotFound for a session that is gone."""
    turn_id = _new_turn_id()
    storage = session.storage
    with _lock:  # ours before the row says so: this process never thinks it gone
        _running.add(turn_id)
    try:
        with storage.transaction():
            taken = storage.claim_turn(session.id, turn_id, status=status,
                                       stale_before=lease_cutoff())
            if not taken:  # held: taken over only from a holder provably gone
                holder, _ = storage.turn_holder(session.id)
                taken = holder is not None and holder_gone(holder) and storage.claim_turn(
                    session.id, turn_id, status=status, replacing=holder)
            if not taken:
                raise Conflict(f"session {session.id} is busy: a turn is running (stop "
                               "it or wait for it to end)")
            session.emit(events.session_status(status))
    except BaseException:
        with _lock:
            _running.discard(turn_id)
        raise
    return turn_id


def is_held(session: SessionHost) -> bool:
    """Whether a live turn holds the session now (a hint: only claim() is atomic)."""
    holder, seen_at = session.storage.turn_holder(session.id)
    return holder is not None and not _stale(seen_at) and not holder_gone(holder)


def release(session: SessionHost, turn_id: str, status: Status) -> None:
    """Give the claim back, storing and announcing `status` (a turn that lost its claim
    to a newer one, after its lease ran out, changes nothing)."""
    with _lock:
        _running.discard(turn_id)
    with session.storage.transaction():
        if session.storage.release_turn(session.id, turn_id, status=status):
            session.emit(events.session_status(status))


def free_if_gone(session: SessionHost) -> bool:
    """Free a claim whose holder is gone or whose lease ran out (a stop asked of a turn
    that died): status "error", announced. Returns whether one was freed."""
    storage = session.storage
    with storage.transaction():
        holder, seen_at = storage.turn_holder(session.id)
        if holder is None or not (_stale(seen_at) or holder_gone(holder)):
            return False
        if not storage.release_turn(session.id, holder, status="error"):
            return False
        session.emit(events.session_status("error"))
    return True


class Heartbeat:
    """Refreshes a claim at most every HEARTBEAT_SECONDS (called as the turn works)."""

    def __init__(self, session: SessionHost, turn_id: str | None) -> None:
        self.session = session
        self.turn_id = turn_id
        self.next_at = time.monotonic() + HEARTBEAT_SECONDS

    def beat(self) -> None:
        if self.turn_id is None or time.monotonic() < self.next_at:
            return
        self.next_at = time.monotonic() + HEARTBEAT_SECONDS
        self.session.storage.touch_turn(self.session.id, self.turn_id)
