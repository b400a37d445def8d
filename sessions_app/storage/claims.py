"""A session's status, its stop request and the turn it runs: the claim that makes one
turn at a time (memory_core/busy.py), each a single conditional statement."""

from __future__ import annotations

from datetime import datetime

from django.db import connection

from memory_core.busy import BUSY
from memory_core.errors import NotFound
from memory_core.messages import now

from .. import models
from .vendors.chosen import current


class Claims:
    def set_status(self, session_id: str, status: str) -> None:
        # A busy status is fresh news of the work: reads show it (busy.shown_status).
        seen = ", turn_seen_at = %s" if status in BUSY else ""
        params = [status, current().db_datetime(now())] if seen else [status]
        with connection.cursor() as cur:
            cur.execute(f"UPDATE arbor_session SET status = %s{seen} WHERE id = %s",
                        [*params, session_id])

    def set_stop(self, session_id: str, *, requested: bool) -> bool:
        with connection.cursor() as cur:
            if requested:  # only a running turn can be stopped
                cur.execute("UPDATE arbor_session SET stop_requested_at = %s "
                            "WHERE id = %s AND status = 'thinking'",
                            [current().db_datetime(now()), session_id])
            else:
                cur.execute("UPDATE arbor_session SET stop_requested_at = NULL "
                            "WHERE id = %s AND stop_requested_at IS NOT NULL", [session_id])
            return bool(cur.rowcount)

    def stop_requested(self, session_id: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("SELECT 1 FROM arbor_session WHERE id = %s "
                        "AND stop_requested_at IS NOT NULL", [session_id])
            return cur.fetchone() is not None

    def claim_turn(self, session_id: str, turn_id: str, *, status: str,
                   stale_before: datetime | None = None, replacing: str | None = None) -> bool:
        # One conditional UPDATE: Postgres re-checks the WHERE on the row it locked, and
        # SQLite runs one writer at a time, so of two claims at once exactly one wins.
        db = current().db_datetime
        if replacing is not None:
            held, params = "turn_id = %s", [replacing]
        else:
            held = "(turn_id IS NULL OR turn_seen_at IS NULL OR turn_seen_at < %s)"
            params = [db(stale_before or now())]
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET status = %s, turn_id = %s, turn_seen_at = %s, "
                        f"stop_requested_at = NULL WHERE id = %s AND {held}",
                        [status, turn_id, db(now()), session_id, *params])
            return bool(cur.rowcount)

    def turn_holder(self, session_id: str) -> tuple[str | None, datetime | None]:
        row = (models.Session.objects.filter(id=session_id)
               .values_list("turn_id", "turn_seen_at").first())
        if row is None:
            raise NotFound(f"session {session_id} not found")
        return row[0], row[1]

    def touch_turn(self, session_id: str, turn_id: str) -> None:
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET turn_seen_at = %s WHERE id = %s AND turn_id = %s",
                        [current().db_datetime(now()), session_id, turn_id])

    def release_turn(self, session_id: str, turn_id: str, *, status: str) -> bool:
        with connection.cursor() as cur:
            cur.execute("UPDATE arbor_session SET status = %s, turn_id = NULL "
                        "WHERE id = %s AND turn_id = %s", [status, session_id, turn_id])
            return bool(cur.rowcount)
