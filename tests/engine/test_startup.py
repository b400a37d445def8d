"""Startup: SQLite connection settings and the FTS5 check."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from sessions_app.storage.vendors import sqlite_fts5 as checks


@pytest.mark.sqlite_only
def test_sqlite_runs_in_wal_with_foreign_keys_and_busy_timeout(db):
    with connection.cursor() as cur:
        cur.execute("PRAGMA journal_mode")
        assert cur.fetchone()[0].lower() == "wal"
        cur.execute("PRAGMA foreign_keys")
        assert cur.fetchone()[0] == 1
        cur.execute("PRAGMA synchronous")
        assert cur.fetchone()[0] == 1  # NORMAL
        cur.execute("PRAGMA busy_timeout")
        assert cur.fetchone()[0] >= 5000
    assert connection.transaction_mode == "IMMEDIATE"


def test_missing_fts5_stops_startup_with_a_clear_message(monkeypatch):
    sqlite = "django.db.backends.sqlite3"
    monkeypatch.setattr(checks, "fts5_available", lambda: False)
    with pytest.raises(ImproperlyConfigured, match="FTS5"):
        checks.require_fts5(sqlite)
    checks.require_fts5("django.db.backends.postgresql")  # Postgres needs no FTS5
    monkeypatch.setattr(checks, "fts5_available", lambda: True)
    checks.require_fts5(sqlite)


def test_health_endpoint_reports_database(client, db):
    response = client.get("/health")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": connection.vendor}
