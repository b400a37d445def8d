"""How arbor/settings.py connects to each database (issue 25): no persistent connections
on either; on Postgres a bounded pool per worker, sized by ARBOR_DB_POOL_*, with the
prepared-statement options kept."""

from __future__ import annotations

import runpy
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from tests.live_server import ROOT

POSTGRES = "postgres://arbor@db.example:5432/arbor"
POOL_ENV = ("ARBOR_DB_POOL_MAX", "ARBOR_DB_POOL_MIN", "ARBOR_DB_POOL_TIMEOUT",
            "ARBOR_PG_PREPARED")


def database(monkeypatch: pytest.MonkeyPatch, url: str, **env: str) -> dict[str, Any]:
    """settings.DATABASES["default"] as a process started with this environment sees it."""
    for name in POOL_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ARBOR_SECRET_KEY", "test")  # no key file written
    monkeypatch.setenv("DATABASE_URL", url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    found: dict[str, Any] = runpy.run_path(str(ROOT / "arbor" / "settings.py"))["DATABASES"]
    return found["default"]  # type: ignore[no-any-return]


def test_postgres_borrows_from_a_bounded_pool_and_sqlite_opens_its_own(monkeypatch, tmp_path):
    pg = database(monkeypatch, POSTGRES)
    assert pg["CONN_MAX_AGE"] == 0  # Django's pool refuses persistent connections
    assert pg["OPTIONS"]["pool"] == {"min_size": 2, "max_size": 20, "timeout": 5.0,
                                     "name": "arbor"}
    assert pg["OPTIONS"]["server_side_binding"] is True
    assert pg["OPTIONS"]["prepare_threshold"] == 5

    sized = database(monkeypatch, POSTGRES, ARBOR_DB_POOL_MAX="5", ARBOR_DB_POOL_MIN="9",
                     ARBOR_DB_POOL_TIMEOUT="0.5", ARBOR_PG_PREPARED="0")
    assert sized["OPTIONS"] == {"pool": {"min_size": 5, "max_size": 5, "timeout": 0.5,
                                         "name": "arbor"}}  # min capped at max
    unpooled = database(monkeypatch, POSTGRES, ARBOR_DB_POOL_MAX="0")
    assert "pool" not in unpooled["OPTIONS"] and unpooled["CONN_MAX_AGE"] == 0

    sqlite = database(monkeypatch, f"sqlite:///{tmp_path / 'a.sqlite3'}", ARBOR_DB_POOL_MAX="5")
    assert sqlite["CONN_MAX_AGE"] == 0 and "pool" not in sqlite["OPTIONS"]
    assert sqlite["OPTIONS"]["transaction_mode"] == "IMMEDIATE"


@pytest.mark.parametrize("env", [{"ARBOR_DB_POOL_MAX": "-1"}, {"ARBOR_DB_POOL_TIMEOUT": "0"},
                                 {"ARBOR_DB_POOL_MIN": "-2"}])
def test_a_pool_setting_out_of_range_stops_the_start_with_its_name(monkeypatch, env):
    with pytest.raises(ImproperlyConfigured, match=next(iter(env))):
        database(monkeypatch, POSTGRES, **env)
