"""One daphne worker on PostgreSQL under load (issue 25): its connections come from a
bounded pool (ARBOR_DB_POOL_MAX), so a hundred clients at once get no 5xx and the worker
never holds more connections than the pool's maximum; a request that cannot get a
connection in time answers 503 with Retry-After, never 500.

The worker's connections are told apart in pg_stat_activity by the application_name its
DATABASE_URL sets.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import psycopg
import pytest
from django.db import connection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import ConnectionClosed

from memory_core import SessionManager
from sessions_app import models
from sessions_app.auth import create_key
from tests.api.test_daphne_streaming import LAUNCH as FAKE_MODEL  # paced by the delay
from tests.conftest import make_agent
from tests.live_server import database_url, running_daphne

pytestmark = pytest.mark.postgres_only

APP = "arbor-pool-test"  # the worker's application_name
POOL_MAX = 5
CLIENTS = 100
SESSIONS = 20  # clients share sessions, five each: appends to one session queue on its row
ROUNDS = 2  # per client: an append, then a history read


def worker_env(**extra: str) -> dict[str, str]:
    return {"DATABASE_URL": f"{database_url()}?application_name={APP}", **extra}


def dsn() -> str:
    s = connection.settings_dict
    return (f"host={s['HOST'] or '127.0.0.1'} port={s['PORT'] or 5432} dbname={s['NAME']} "
            f"user={s['USER']}" + (f" password={s['PASSWORD']}" if s.get("PASSWORD") else ""))


def held_by_worker(cur: psycopg.Cursor[Any]) -> int:
    cur.execute("SELECT count(*) FROM pg_stat_activity WHERE application_name = %s", [APP])
    row = cur.fetchone()
    assert row is not None
    return int(row[0])


@contextmanager
def sampled_connections(every: float = 0.02) -> Iterator[list[int]]:
    """Counts the worker's connections every `every` seconds while the block runs."""
    samples: list[int] = []
    stop = threading.Event()

    def sample() -> None:
        with psycopg.connect(dsn(), autocommit=True) as conn, conn.cursor() as cur:
            while not stop.is_set():
                samples.append(held_by_worker(cur))
                stop.wait(every)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    try:
        yield samples
    finally:
        stop.set()
        thread.join(5)


def message(text: str) -> dict[str, Any]:
    return {"message": {"role": "user", "parts": [{"type": "text", "text": text}]}}


async def load(base: str, key: str, sessions: list[str]) -> list[int]:
    """CLIENTS clients at once, each appending and reading the history ROUNDS times."""
    limits = httpx.Limits(max_connections=CLIENTS, max_keepalive_connections=CLIENTS)
    async with httpx.AsyncClient(base_url=f"{base}/api/v1", limits=limits, timeout=30,
                                 headers={"Authorization": f"Bearer {key}"}) as http:
        async def client(n: int) -> list[int]:
            session = sessions[n % len(sessions)]
            statuses = []
            for r in range(ROUNDS):
                sent = await http.post(f"/sessions/{session}/messages",
                                       json=message(f"client {n} round {r}"))
                statuses.append(sent.status_code)
                read = await http.get(f"/sessions/{session}/history")
                statuses.append(read.status_code)
            return statuses

        results = await asyncio.gather(*(client(n) for n in range(CLIENTS)))
    return [status for statuses in results for status in statuses]


def test_a_hundred_clients_get_no_5xx_and_the_worker_holds_at_most_the_pool(
        transactional_db, tmp_path):
    agent = make_agent("alice", "assistant")
    key = create_key(agent.owner)[1]
    manager = SessionManager.for_agent(agent)
    sessions = [manager.create(f"load {n}").id for n in range(SESSIONS)]
    with running_daphne(tmp_path, env=worker_env(ARBOR_DB_POOL_MAX=str(POOL_MAX))) as base:
        started = time.monotonic()
        with sampled_connections() as samples:
            statuses = asyncio.run(load(base, key, sessions))
        took = time.monotonic() - started
        time.sleep(0.2)
        with psycopg.connect(dsn(), autocommit=True) as conn, conn.cursor() as cur:
            after = held_by_worker(cur)

    assert len(statuses) == CLIENTS * ROUNDS * 2
    assert [s for s in statuses if s >= 500] == []
    assert sorted(set(statuses)) == [200, 201]
    assert samples and max(samples) <= POOL_MAX, (max(samples), took)
    assert max(samples) > 0  # the sampler saw the worker at work
    assert after <= POOL_MAX
    stored = models.Message.objects.filter(session__agent=agent).count()
    assert stored == CLIENTS * ROUNDS
    print(f"{len(statuses)} requests from {CLIENTS} clients in {took:.1f} s; "
          f"the worker held at most {max(samples)} connections, {after} after")


# --- no connection in time: 503 ---------------------------------------------------------

@contextmanager
def session_row_locked(session_id: str) -> Iterator[None]:
    """Another client holds the session's row: an append to it waits, holding its
    connection (the worker's only one, with ARBOR_DB_POOL_MAX=1)."""
    with psycopg.connect(dsn()) as conn:
        conn.execute("SELECT 1 FROM arbor_session WHERE id = %s FOR UPDATE", [session_id])
        yield
        conn.rollback()


def wait_for_worker_blocked_on_lock(timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    with psycopg.connect(dsn(), autocommit=True) as conn, conn.cursor() as cur:
        while time.monotonic() < deadline:
            cur.execute("SELECT count(*) FROM pg_stat_activity "
                        "WHERE application_name = %s AND wait_event_type = 'Lock'", [APP])
            row = cur.fetchone()
            if row and row[0]:
                return
            time.sleep(0.05)
    pytest.fail("the worker's append never waited on the locked session row")


async def refused_socket(base: str, session_id: str, key: str) -> tuple[dict[str, Any], int]:
    url = base.replace("http://", "ws://") + f"/ws/sessions/{session_id}/"
    async with ws_connect(url, additional_headers={"Authorization": f"Bearer {key}"}) as ws:
        frame = json.loads(await asyncio.wait_for(ws.recv(), 10))
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 10)
        assert ws.close_code is not None
        return frame, ws.close_code


def test_a_request_that_cannot_get_a_connection_in_time_answers_503_with_retry_after(
        transactional_db, tmp_path, client):
    agent = make_agent("alice", "assistant")
    agent.owner.set_password("a long password")
    agent.owner.save()
    key = create_key(agent.owner)[1]
    session_id = SessionManager.for_agent(agent).create("busy").id
    client.force_login(agent.owner)
    cookies = {"sessionid": client.cookies["sessionid"].value}
    headers = {"Authorization": f"Bearer {key}"}
    env = worker_env(ARBOR_DB_POOL_MAX="1", ARBOR_DB_POOL_TIMEOUT="0.5")
    appended: list[int] = []
    with running_daphne(tmp_path, env=env) as base:
        api = f"{base}/api/v1/sessions/{session_id}"
        with session_row_locked(session_id):
            blocked = threading.Thread(target=lambda: appended.append(httpx.post(
                f"{api}/messages", json=message("waits"), headers=headers,
                timeout=30).status_code))
            blocked.start()
            wait_for_worker_blocked_on_lock()

            read = http_get(f"{api}/history", headers)
            with httpx.Client(cookies=cookies, timeout=30) as browser:
                page = browser.get(f"{base}/")
            health = http_get(f"{base}/health", {})
            ready = http_get(f"{base}/ready", {})
            socket_frame, close_code = asyncio.run(refused_socket(base, session_id, key))
        blocked.join(30)
        after = http_get(f"{api}/history", headers)
        log = "\n".join(p.read_text(errors="replace") for p in tmp_path.glob("daphne-*.log"))

    assert read.status_code == 503, read.text
    assert read.headers["content-type"].startswith("application/json")
    body = read.json()
    assert body["code"] == "unavailable" and "database" in body["detail"], body
    assert int(read.headers["retry-after"]) >= 1
    assert page.status_code == 503 and int(page.headers["retry-after"]) >= 1
    assert page.headers["content-type"].startswith("text/html")
    assert "try again" in page.text.lower()
    # Alive (liveness touches no database), but not ready for more traffic.
    assert health.status_code == 200
    assert ready.status_code == 503 and int(ready.headers["retry-after"]) >= 1
    assert ready.json()["down"] == ["database"]
    assert socket_frame["type"] == "error" and socket_frame["code"] == "unavailable"
    assert close_code == 4503
    # Once the held connection is back, the worker answers again.
    assert appended == [201]
    assert after.status_code == 200 and [m["parts"][0]["text"] for m in
                                          after.json()["messages"]] == ["waits"]
    assert "no database connection" in log and "Traceback" not in log, log


def http_get(url: str, headers: dict[str, str]) -> httpx.Response:
    return httpx.get(url, headers=headers, timeout=30)


# --- connections given back ---------------------------------------------------------------

def test_a_streaming_chat_turn_holds_no_connection_while_its_model_thinks(
        transactional_db, tmp_path):
    """With one connection in the pool, a history read made while a turn streams (its
    model pausing between words) gets the connection, not a 503."""
    agent = make_agent("alice", "assistant")
    key = create_key(agent.owner)[1]
    session_id = SessionManager.for_agent(agent).create("slow model").id
    headers = {"Authorization": f"Bearer {key}"}
    env = worker_env(ARBOR_DB_POOL_MAX="1", ARBOR_DB_POOL_TIMEOUT="1",
                     ARBOR_DEMO_STREAM_DELAY="0.4")
    reads: list[int] = []
    with running_daphne(tmp_path, env=env, launch=FAKE_MODEL) as base, \
            sampled_connections() as samples:
        api = f"{base}/api/v1/sessions/{session_id}"
        with httpx.stream("POST", f"{api}/chat", headers=headers, timeout=30,
                          json={"content": "one two three four", "stream": True}) as response:
            assert response.status_code == 200
            kinds = []
            for line in response.iter_lines():
                if line.startswith("event:"):
                    kinds.append(line[6:].strip())
                    if kinds[-1] == "text_delta" and len(reads) < 2:  # mid-turn
                        reads.append(http_get(f"{api}/history", headers).status_code)

    assert kinds[-1] == "done" and kinds.count("text_delta") == 6
    assert reads == [200, 200]
    assert max(samples) <= 1


def test_prepared_statements_work_on_pooled_connections_and_outlive_a_request(
        transactional_db):
    """Server-side binding and prepare_threshold reach the pool's connections; a
    connection given back keeps what it prepared, for the next request to use."""
    from django.db.backends.postgresql.base import ServerBindingCursor

    manager = SessionManager.for_agent(make_agent("alice", "assistant"))
    session = manager.get_session(manager.create("prepared").id)
    connection.close()
    connection.ensure_connection()
    raw = connection.connection
    assert connection.pool is not None and raw._pool is connection.pool
    assert raw.prepare_threshold == 5 and raw.cursor_factory is ServerBindingCursor
    for n in range(8):  # past the threshold on this one connection
        session.append_message({"role": "user", "parts": [{"type": "text", "text": f"{n}"}]})
    connection.close()  # the request ends: the connection goes back to the pool, open
    assert connection.connection is None and not raw.closed
    with raw.cursor() as cur:
        cur.execute("SELECT statement FROM pg_prepared_statements")
        prepared = [row[0] for row in cur.fetchall()]
    assert any("INSERT INTO arbor_message" in text for text in prepared), prepared
