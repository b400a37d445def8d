"""Files on disk after N messages: Arbor's SQLite files beside OpenAI Agents `SQLiteSession`'s.

Each side gets a new file at its defaults and the same conversation, one append per
message, as an agent stores it. What is counted is what a user sees in the folder while
the store is still open: the database file with its `-wal` and `-shm` sidecars, right
after the last append (the burst) and once the writes have paused for PAUSE seconds
(the figure held to 2× the peer's). Arbor runs in a subprocess (`python -m
benchmarks.size N`) so its database is a fresh one whatever database the benchmark run
uses. `--tables` prints where Arbor's bytes go (SQLite's dbstat), largest first.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from .corpus import Corpus
from .report import Result, Target

REPO = Path(__file__).resolve().parents[1]
SIDECARS = ("", "-wal", "-shm")
# Seconds both stores sit still before the files are counted: past Arbor's quiet time
# (sessions_app.storage.vendors.sqlite_wal.QUIET_SECONDS, 1 s), after which it empties the WAL file.
PAUSE = 2.5


def _remove(path: str) -> None:
    for suffix in SIDECARS:
        with contextlib.suppress(FileNotFoundError):
            os.remove(path + suffix)


def files_size(path: str) -> int:
    """Bytes of the database file and its sidecars, those that exist."""
    total = 0
    for suffix in SIDECARS:
        with contextlib.suppress(FileNotFoundError):
            total += os.path.getsize(path + suffix)
    return total


def _burst_and_paused(path: str) -> dict[str, int]:
    burst = files_size(path)
    time.sleep(PAUSE)
    return {"burst": burst, "bytes": files_size(path)}


def sqlite_session_size(messages: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes of an `agents.memory.SQLiteSession`'s files holding `messages` (as SDK
    items), still open: right after the last add ("burst") and after PAUSE ("bytes")."""
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
        try:
            return _burst_and_paused(path)
        finally:
            session.close()
    finally:
        _remove(path)


def _arbor(count: int, tables: bool) -> dict[str, Any]:
    """In a fresh process: migrate a new SQLite file, append `count` messages, count the
    files right after and after PAUSE (the connections still open)."""
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
        out: dict[str, Any] = _burst_and_paused(path)
        if tables:
            with connection.cursor() as cur:
                cur.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name "
                            "ORDER BY 2 DESC LIMIT 12")
                out["tables"] = cur.fetchall()
        connection.close()
        return out
    finally:
        _remove(path)


def arbor_size(count: int, tables: bool = False) -> dict[str, Any]:
    """_arbor's figures, from its subprocess."""
    env = {**os.environ}
    env.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.size", str(count), *(["--tables"] if tables else [])],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=1800, check=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def size(count: int) -> list[Result]:
    """The size rows: Arbor's files over SQLiteSession's, both holding `count` messages,
    once writes paused (held to 2×) and right after the last one."""
    arbor = arbor_size(count)
    peer = sqlite_session_size(Corpus().conversation(count))
    files = "database + -wal + -shm"
    return [
        Result("db_size", f"files on disk after {count:,} messages, writes paused {PAUSE:g} s "
               f"({files}, vs SQLiteSession)", arbor["bytes"] / 1e6, peer["bytes"] / 1e6, "MB",
               Target(2.0)),
        Result("db_size_burst", f"files on disk right after the {count:,}th message "
               f"({files}, vs SQLiteSession)", arbor["burst"] / 1e6, peer["burst"] / 1e6, "MB"),
    ]


if __name__ == "__main__":
    print(json.dumps(_arbor(int(sys.argv[1]), "--tables" in sys.argv[2:])))
