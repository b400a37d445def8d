"""API keys: making them, hashing them, and the bearer check the JSON API runs first.

A key is `arb_` plus 43 random URL-safe characters (256 bits), so a plain SHA-256 of it
is enough to store: there is nothing to brute-force that a slow hash would protect.
"""

from __future__ import annotations

import functools
import hashlib
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from memory_core.limits import is_id

from . import models

KEY_PREFIX = "arb_"
VISIBLE_CHARS = 12  # "arb_" and 8 random characters, shown in lists and the admin


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: the key's owner, and the one agent the key is limited to, if any.

    `session`: (id, agent id or None) of the session the request's URL names, looked up
    with the key in the same query (None when the URL names none)."""

    user_id: int
    agent_id: str | None = None
    key_id: int | None = None
    session: tuple[str, str | None] | None = None
    door: str = "api"  # who block writes are by (memory_core/versions.py): api, ui or mcp

    @property
    def actor_id(self) -> str:
        """The key's id, else the user's: recorded on the block versions it writes."""
        return str(self.key_id if self.key_id is not None else self.user_id)

    def may_use(self, agent_id: str) -> bool:
        return self.agent_id is None or self.agent_id == agent_id


def hash_key(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()


def create_key(
    user: Any, *, agent: models.Agent | None = None, name: str = ""
) -> tuple[models.ApiKey, str]:
    """A new key for `user` (optionally limited to one of their agents): (row, raw key).

    The raw key exists only in the return value; store it now, it cannot be shown again.
    """
    if agent is not None and agent.owner_id != user.pk:
        raise ValueError("an API key can only be limited to an agent of its own user")
    raw = KEY_PREFIX + secrets.token_urlsafe(32)
    row = models.ApiKey.objects.create(
        user=user, agent=agent, name=name, prefix=raw[:VISIBLE_CHARS], key_hash=hash_key(raw)
    )
    return row, raw


def revoke(key: models.ApiKey) -> None:
    if key.revoked_at is None:
        key.revoked_at = timezone.now()
        key.save(update_fields=["revoked_at"])


@functools.cache
def _key_query() -> str:
    users = get_user_model()._meta.db_table
    # (The last use is compared in SQL: a bool, not a timestamp to parse, comes back.)
    return f"""
        SELECT k.id, k.user_id, k.agent_id,
               k.last_used_at IS NULL OR k.last_used_at <= %s, s.agent_id
        FROM arbor_api_key k
        JOIN {users} u ON u.id = k.user_id
        LEFT JOIN arbor_session s ON s.id = %s AND s.agent_id IN (
            SELECT a.id FROM arbor_agent a WHERE a.owner_id = k.user_id)
        WHERE k.key_hash = %s AND k.revoked_at IS NULL AND u.is_active
        LIMIT 1"""


def principal_for_key(raw: str, session_id: str | None = None) -> Principal | None:
    """The principal of a live key (not revoked, active user), in one query; with the
    session `session_id` names when it is one of the key owner's (Principal.session)."""
    if not raw or len(raw) > 200:
        return None
    # (late: the storage imports models, which need the app registry)
    from .storage import hot
    from .storage.vendors.chosen import current

    looked_up = session_id if is_id(session_id) else None
    now = timezone.now()
    with hot.cursor() as cur:
        cur.execute(_key_query(), [current().db_datetime(now - USE_RESOLUTION),
                                   looked_up, hash_key(raw)])
        row = cur.fetchone()
    if row is None:
        return None
    if row[3]:  # Record when a key was used, at most once a minute (no UPDATE between).
        models.ApiKey.objects.filter(id=row[0]).update(last_used_at=now)
    session = (looked_up, row[4]) if looked_up is not None else None
    return Principal(user_id=row[1], agent_id=row[2], key_id=row[0], session=session)


USE_RESOLUTION = timedelta(minutes=1)


class ApiKeyAuth(HttpBearer):
    """`Authorization: Bearer <key>`; request.auth becomes a Principal."""

    openapi_description = "An Arbor API key, made by `manage.py create_api_key` or the admin."

    def authenticate(self, request: HttpRequest, token: str) -> Principal | None:
        match = request.resolver_match
        session_id = match.kwargs.get("session_id") if match is not None else None
        return principal_for_key(token.strip(), session_id)
