"""Live events: what WebSocket subscribers cost a writer, and how soon they hear of a write.

- Append through the JSON API to one daphne worker (the `make run` setup: the in-memory
  channel layer) on sessions with 10 and 100 subscribers, beside the same appends on a
  session with none. The writer pauses `PACE` between appends, as an agent does between
  model calls; blocks of appends take turns among the three sessions, so drift hits them
  alike. Back to back, with no pause, the fan-out shares the worker's one core with the
  next request: that figure is printed too, without a target.
- A message event shown in 10 browser tabs: the worker renders the message once for
  them (sessions_app/live/fragments.py), beside what the tabs did before, one fragment
  GET each (time and queries per event).
- Fan-out delay: from sending an append until each of 100 subscribers has its event, p50
  and p99, beside the append's own round trip (the writer's acknowledgement): on one
  worker, and across two workers sharing Redis (the subscribers on the worker that did
  not take the write). The Redis rows are left out, with a note, when Redis is unreachable.

The subscribers run in their own process (`benchmarks.subscribers`), and every subscriber
must receive every event exactly once, or the run reports a problem.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx

from memory_core import SessionManager

from .cases import Bench, alternate
from .report import Result, Target

SUBSCRIBERS = (0, 10, 100)
TABS = 10  # browser tabs on one session, for the rendered-fragment row
BLOCK = 50  # appends per turn of one session
PACE = 0.02  # seconds the writer waits between appends (50 appends/s into one session)
REDIS_URL = os.environ.get("ARBOR_BENCH_REDIS_URL", "redis://127.0.0.1:6379/6")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _ws_url(base: str, session_id: str) -> str:
    return base.replace("http://", "ws://", 1) + f"/ws/sessions/{session_id}/"


@contextmanager
def _subscribers(spec: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """Start the subscriber process; on leaving, `result["arrivals"]` holds what it saw."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.subscribers", json.dumps(spec)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert process.stdin is not None and process.stdout is not None
    result: dict[str, Any] = {}
    try:
        if process.stdout.readline().strip() != "ready":
            raise RuntimeError("the benchmark's subscribers could not connect")
        yield result
        process.stdin.write("stop\n")
        process.stdin.flush()
        result["arrivals"] = json.loads(process.stdout.readline())
    finally:
        if "arrivals" not in result:
            process.kill()
        process.wait(timeout=30)


def _append(http: httpx.Client, session_id: str, text: str,
            pace: float = PACE) -> tuple[str, float, float]:
    """(message id, sent, acknowledged) on the monotonic clock the subscribers use."""
    time.sleep(pace)
    body = {"message": {"role": "user", "parts": [{"type": "text", "text": text}]}}
    sent = time.monotonic()
    response = http.post(f"/api/v1/sessions/{session_id}/messages", json=body)
    acknowledged = time.monotonic()
    if response.status_code != 201:
        raise RuntimeError(f"append answered {response.status_code}: {response.text[:200]}")
    return str(response.json()["id"]), sent, acknowledged


def _check_delivery(b: Bench, writes: list[tuple[str, float, float]], count: int,
                    arrivals: dict[str, list[float]], where: str) -> list[float]:
    """Every subscriber got every event once; the delays from each send."""
    delays = []
    for message_id, sent, _ in writes:
        got = arrivals.get(message_id, [])
        if len(got) != count:
            b.check(False, f"{where}: {len(got)} of {count} subscribers got {message_id}")
        delays += [(t - sent) * 1e3 for t in got]
    return delays


def _fan_out_rows(key: str, where: str, delays: list[float],
                  writes: list[tuple[str, float, float]]) -> list[Result]:
    acks = [(ack - sent) * 1e3 for _, sent, ack in writes]
    label = f"fan-out delay to 100 subscribers, {where}"
    return [
        Result(f"{key}_p50", f"{label}, p50 (vs the append's round trip)",
               statistics.median(delays), statistics.median(acks), "ms"),
        Result(f"{key}_p99", f"{label}, p99 (vs the append's round trip)",
               _percentile(delays, 0.99), _percentile(acks, 0.99), "ms"),
    ]


def live(b: Bench) -> list[Result]:
    from sessions_app.auth import create_key
    from sessions_app.models import Agent
    from tests.live_server import running_daphne

    key = create_key(Agent.objects.get(id=b.manager.agent_id).owner)[1]
    manager = SessionManager.for_agent(b.manager.agent_id)
    headers = {"Authorization": f"Bearer {key}"}
    rounds = max(1, b.sizes.live_appends // BLOCK)
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        base = stack.enter_context(running_daphne(Path(tmp)))
        http = stack.enter_context(httpx.Client(base_url=base, headers=headers, timeout=60))
        sessions = {n: manager.create(f"live, {n} subscribers").id for n in SUBSCRIBERS}
        spec = [{"url": _ws_url(base, sid), "key": key, "count": n}
                for n, sid in sessions.items() if n]
        writes: dict[int, list[tuple[str, float, float]]] = {n: [] for n in SUBSCRIBERS}
        burst: dict[int, list[tuple[str, float, float]]] = {0: [], 100: []}
        with _subscribers(spec) as seen:
            for r in range(rounds):
                order = SUBSCRIBERS[r % 3:] + SUBSCRIBERS[:r % 3]
                for n in order:
                    writes[n] += [_append(http, sessions[n], f"live {r} {i}")
                                  for i in range(BLOCK)]
            for r in range(rounds):
                for n in (0, 100) if r % 2 else (100, 0):
                    burst[n] += [_append(http, sessions[n], f"burst {r} {i}", pace=0)
                                 for i in range(BLOCK)]
        ack = {n: statistics.median([(a - s) * 1e3 for _, s, a in w]) for n, w in writes.items()}
        burst_ack = {n: statistics.median([(a - s) * 1e3 for _, s, a in w])
                     for n, w in burst.items()}
        delays = {n: _check_delivery(b, writes[n] + burst.get(n, []), n, seen["arrivals"],
                                     "one worker")
                  for n in SUBSCRIBERS[1:]}
        paced = f"{len(writes[0])} msgs {PACE * 1e3:.0f} ms apart"
        results += [
            Result("live_append_10", f"append via the API, 10 WebSocket subscribers (vs 0), "
                   f"{paced}", ack[10], ack[0], "ms/msg"),
            Result("live_append_100", "append via the API, 100 WebSocket subscribers (vs 0)",
                   ack[100], ack[0], "ms/msg", Target(1.2)),
            Result("live_append_100_burst", "the same, back to back (fan-out shares the core)",
                   burst_ack[100], burst_ack[0], "ms/msg"),
        ]
        fan_out = delays[100][:len(writes[100]) * 100]  # the paced writes' deliveries
        results += _fan_out_rows("fan_out_one", "one worker", fan_out, writes[100])
    results += _across_workers(b, manager, key, headers)
    return results + _tabs(b, manager)


def _tabs(b: Bench, manager: SessionManager) -> list[Result]:
    """One rendered fragment per event in the hub, vs one fragment GET per tab."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from sessions_app.live.fragments import message_html
    from sessions_app.models import Agent

    session = manager.get_session(manager.create("tabs").id)
    question = session.append_message({"role": "user", "content": "a question"})
    answer = session.append_message({"role": "assistant", "content": b.corpus.conversation(
        2)[1]["parts"][0]["text"] + "\n\n**bold** and `code`"}, question.id)
    frame = {"type": "message.appended", "session_id": session.id, "seq": 3,
             "data": {"message": answer.to_dict(), "parent_id": question.id}}
    browser = Client()
    browser.force_login(Agent.objects.get(id=b.manager.agent_id).owner)
    url = f"/sessions/{session.id}/messages/{answer.id}/"

    def render() -> None:
        message_html(frame, b.manager.agent_id)

    def fetch() -> None:
        for _ in range(TABS):
            assert browser.get(url, headers={"HX-Request": "true"}).status_code == 200

    rendered, fetched = alternate(render, fetch, b.sizes.rounds * 3)
    with CaptureQueriesContext(connection) as one:
        render()
    with CaptureQueriesContext(connection) as each:
        fetch()
    label = f"a message event shown in {TABS} browser tabs"
    return [
        Result("live_tabs_render", f"{label}: one render in the hub (vs a GET per tab)",
               rendered * 1e3, fetched * 1e3, "ms/event"),
        Result("live_tabs_queries", f"{label}: queries (vs a GET per tab)",
               len(one.captured_queries), len(each.captured_queries), "queries"),
    ]


def _redis_reachable() -> bool:
    import redis

    try:
        return bool(redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping())
    except redis.RedisError:
        return False


def _across_workers(b: Bench, manager: SessionManager, key: str,
                    headers: dict[str, str]) -> list[Result]:
    from tests.live_server import running_daphne

    if not _redis_reachable():
        print(f"live events across two workers: skipped, no Redis at {REDIS_URL} "
              "(ARBOR_BENCH_REDIS_URL)", file=sys.stderr)
        return []
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        writer, reader = (stack.enter_context(running_daphne(Path(tmp),
                                                             env={"REDIS_URL": REDIS_URL}))
                          for _ in range(2))
        http = stack.enter_context(httpx.Client(base_url=writer, headers=headers, timeout=60))
        session_id = manager.create("live, two workers").id
        writes = []
        with _subscribers([{"url": _ws_url(reader, session_id), "key": key,
                            "count": 100}]) as seen:
            for i in range(b.sizes.live_appends):
                writes.append(_append(http, session_id, f"across {i}"))
                time.sleep(0.002)  # a steady stream, not one burst
        delays = _check_delivery(b, writes, 100, seen["arrivals"], "two workers")
    return _fan_out_rows("fan_out_two", "two workers via Redis", delays, writes)
