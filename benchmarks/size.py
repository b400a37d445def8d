"""Database size after N messages: Arbor's SQLite file beside OpenAI Agents `SQLiteSession`'s.

Each side gets a new file at its defaults and the same conversation, one append per
message, as an agent stores it; sizes are taken after a WAL checkpoint (what stays on
disk). Arbor runs in a subprocess (`python -m benchmarks.size N`) so its database is a
fresh one whatever database the benchmark run uses. `--tables` prints where Arbor's
bytes go (SQLite's dbstat), largest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from .corpus import Corpus
from .report import Result, Target

REPO = Path(__file__).resolve().parents[1]


def _remove(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)


def _checkpointed_size(path: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return os.path.getsize(path)


def sqlite_session_size(messages: list[dict[str, Any]]) -> int:
    """Bytes of an `agents.memory.SQLiteSession` file holding `messages` (as SDK items)."""
    from agents.memory import SQLiteSession

    fd, path = tempfile.mkstemp(prefix="arbor-size-sdk-", suffix=".sqlite3")
    os.close(fd)
    _remove(path)
    try:
        session = SQLiteSession("size", path)

        async def store() -> None:
            for m in messages:
                text = "\n".join(p["text"] for p in m["parts"] if p.get("type") == "text")
                await session.add_items([{"role": m["role"], "content": text}])

        asyncio.run(store())
        session.close()
        return _checkpointed_size(path)
    finally:
        _remove(path)


def _arbor(count: int, tables: bool) -> dict[str, Any]:
    """In a fresh process: migrate a new SQLite file, append `count` messages."""
    fd, path = tempfile.mkstemp(prefix="arbor-size-", suffix=".sqlite3")
    os.close(fd)
    os.environ["DATABASE_URL"] = f"sqlite:///{path}"
    os.environ["ARBOR_DEBUG"] = "0"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
    try:
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0, interactive=False)
        from django.contrib.auth import get_user_model
        from django.db import connection

        from memory_core import SessionManager
        from sessions_app.models import Agent

        user = get_user_model().objects.create(username="size")
        manager = SessionManager.for_agent(Agent.objects.create(owner=user, name="size"))
        session = manager.get_session(manager.create("size").id)
        for message in Corpus().conversation(count):
            session.append_message(message)
        out: dict[str, Any] = {}
        if tables:
            with connection.cursor() as cur:
                cur.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                            "ORDER BY 2 DESC LIMIT 12")
                out["tables"] = cur.fetchall()
        connection.close()
        out["bytes"] = _checkpointed_size(path)
        return out
    finally:
        _remove(path)


def arbor_size(count: int, tables: bool = False) -> dict[str, Any]:
    env = {**os.environ}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.size", str(count), *(["--tables"] if tables else [])],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def size(count: int) -> list[Result]:
    """The size row: Arbor's file over SQLiteSession's, both holding `count` messages."""
    arbor = arbor_size(count)["bytes"]
    peer = sqlite_session_size(Corpus().conversation(count))
    return [Result("db_size", f"database size after {count:,} messages (vs SQLiteSession)",
                   arbor / 1e6, peer / 1e6, "MB", Target(2.0))]


if __name__ == "__main__":
    print(json.dumps(_arbor(int(sys.argv[1]), "--tables" in sys.argv[2:])))
