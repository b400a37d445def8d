"""Who a deletion is by, for the erasure log: set by each door (access.py for the API,
pages and MCP; the admin; a policy run; commands), read where the deletion is recorded.
A context variable, so a policy run's thread and each request keep their own; the
request middleware clears it, so a request never inherits an earlier one's."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Actor:
    by: str  # user, key, policy or system
    by_id: str | None
    door: str  # api, ui, mcp, admin, policy, command


SYSTEM = Actor("system", None, "command")
_current: ContextVar[Actor | None] = ContextVar("arbor_erasure_actor", default=None)


def current() -> Actor:
    return _current.get() or SYSTEM


def set_principal(principal: object) -> None:
    """A principal of auth.py (user_id, key_id, door)."""
    key_id = getattr(principal, "key_id", None)
    if key_id is not None:
        _current.set(Actor("key", str(key_id), getattr(principal, "door", "api")))
    else:
        _current.set(Actor("user", str(getattr(principal, "user_id", "")),
                           getattr(principal, "door", "api")))


def set_admin(user: object) -> None:
    """A deletion through the admin, by the signed-in staff user."""
    _current.set(Actor("user", str(getattr(user, "pk", "")), "admin"))


def clear() -> None:
    _current.set(None)


@contextmanager
def acting(actor: Actor) -> Iterator[None]:
    token = _current.set(actor)
    try:
        yield
    finally:
        _current.reset(token)
