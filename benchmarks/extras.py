"""Figures for context blocks, compaction and the HTTP API, each beside the raw work it does.

- prompt render (6 blocks) and one set_context tool call, beside the raw write each ends
  in (the prompt row update; the block value update), on the driver connection under Django;
- the auto-compaction check per append, beside the same append without the check, plus
  its query count at two path lengths (constant);
- a history read with 10 overlays, beside the raw path CTE plus overlay query;
- append and history through the JSON API (Django's full request stack, in process),
  beside the same engine calls.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import orjson
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from memory_core import SessionManager
from sessions_app.storage.sql import PATH_TO_LATEST as _PATH_TO_LATEST

from .baseline import qmark
from .cases import Bench, alternate
from .report import Result, Target

PROMPT_BLOCKS = 6


def _raw(sql: str, params: list[Any]) -> None:
    """One statement straight on the DB-API connection under Django."""
    raw = connection.connection
    if connection.vendor == "sqlite":
        raw.execute(qmark(sql), params)
    else:
        raw.execute(sql, params)


def _per_call(fn: Callable[[], Any], n: int) -> Callable[[], None]:
    def run() -> None:
        for _ in range(n):
            fn()
    return run


def blocks(b: Bench) -> list[Result]:
    manager = (SessionManager.for_agent(b.manager.agent_id)
               .with_context("soul", kind="readonly", content="You are the benchmark agent.",
                             description="Identity")
               .with_context("memory", description="Learned facts", max_tokens=2000)
               .with_context("todos", description="Open tasks", max_tokens=500)
               .with_context("profile", scope="agent", description="The user")
               .with_context("knowledge", kind="search", description="Reference")
               .with_context("skills", kind="skill", description="How-tos"))
    session = manager.get_session(manager.create("blocks").id)
    session.replace_context_block("memory", "\n".join(f"- fact {i}" for i in range(40)))
    session.replace_context_block("todos", "- one\n- two")
    session.replace_context_block("profile", "name: bench")
    for i in range(5):
        session.set_context_entry("knowledge", f"k{i}", f"entry {i} about deployment")
        session.set_context_entry("skills", f"s{i}", f"skill {i}", f"Skill number {i}")
    prompt = session.refresh_system_prompt()
    tool = {t.name: t for t in session.tools()}["set_context"]
    key = session.context.namespace(session.context.block("memory").spec)
    calls = 50
    counter = iter(range(10**9))

    def render() -> None:
        session.refresh_system_prompt()

    def raw_prompt() -> None:
        _raw("UPDATE arbor_session_prompt SET text = %s, frozen_at = %s WHERE session_id = %s",
             [prompt, "2026-01-01 00:00:00", session.id])

    def set_context() -> None:
        tool.execute({"label": "memory", "content": f"- fact {next(counter)}", "action": "replace"})

    def raw_value() -> None:
        _raw("UPDATE arbor_block_value SET content = %s WHERE key = %s",
             [f"- fact {next(counter)}", key])

    a1, r1 = alternate(_per_call(render, calls), _per_call(raw_prompt, calls), b.sizes.rounds)
    a2, r2 = alternate(_per_call(set_context, calls), _per_call(raw_value, calls), b.sizes.rounds)
    return [
        Result("prompt_render", f"render a prompt of {PROMPT_BLOCKS} blocks (vs its row write)",
               a1 / calls * 1e3, r1 / calls * 1e3, "ms"),
        Result("set_context", "set_context tool call (vs its value write)",
               a2 / calls * 1e3, r2 / calls * 1e3, "ms"),
    ]


def compaction(b: Bench) -> list[Result]:
    n = 2 * b.sizes.branch_path  # 2,000 in a full run
    half = n // 2
    plain = SessionManager.for_agent(b.manager.agent_id)
    checked = SessionManager.for_agent(b.manager.agent_id).compact_after(10**12)
    s_plain = plain.get_session(plain.create("plain").id)
    s_checked = checked.get_session(checked.create("checked").id)
    messages = b.corpus.conversation(n)
    for s in (s_plain, s_checked):
        s.append_messages(messages[:half])
    a_ms, r_ms = [], []
    clock = time.perf_counter
    for m in messages[half:]:
        t = clock()
        s_checked.append_message(m)
        a_ms.append((clock() - t) * 1e3)
        t = clock()
        s_plain.append_message(m)
        r_ms.append((clock() - t) * 1e3)
    counts = []
    for length in (10, half):
        s = checked.get_session(checked.create(f"count {length}").id)
        s.append_messages(messages[:length])
        s.append_message(messages[0])  # the remembered estimate is now in place
        with CaptureQueriesContext(connection) as ctx:
            s.append_message(messages[1])
        counts.append(len([q for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]]))
    b.check(counts[0] == counts[1], f"auto-compaction check: {counts} queries, not constant")
    with CaptureQueriesContext(connection) as ctx:
        s_plain.append_message(messages[2])
    plain_count = len([q for q in ctx.captured_queries if "SAVEPOINT" not in q["sql"]])

    overlays = plain.get_session(plain.create("overlays").id)
    ids = [m.id for m in overlays.append_messages(b.corpus.conversation(half))]
    span = half // 10
    for i in range(10):  # ten overlays, each hiding most of a tenth of the path
        overlays.add_compaction(f"summary {i}", ids[i * span + 1], ids[i * span + span - 2])
    got = overlays.get_history()
    b.check(len(got) == half - 10 * (span - 3), f"history with overlays has {len(got)} messages")

    def raw_read() -> None:
        # The same two statements on the driver connection, plus the JSON decode.
        raw = connection.connection.cursor()
        mark = "?" if connection.vendor == "sqlite" else "%s"
        raw.execute(_PATH_TO_LATEST.replace("%s", mark), [overlays.id])
        rows = [(orjson.loads(r[3]), orjson.loads(r[4])) for r in raw.fetchall()]
        raw.execute(f"SELECT * FROM arbor_compaction WHERE session_id = {mark}", [overlays.id])
        raw.fetchall()
        raw.close()
        del rows

    a, r = alternate(overlays.get_history, raw_read, b.sizes.rounds)
    return [
        Result("compaction_check", "append with auto-compaction check (vs without)",
               statistics.median(a_ms), statistics.median(r_ms), "ms/msg"),
        Result("compaction_check_queries", f"queries per checked append (10- and {half:,}-msg paths)",
               max(counts), plain_count, "queries"),
        Result("history_10_overlays", f"get_history, {half:,} msgs with 10 overlays (vs raw SQL)",
               a * 1e3, r * 1e3, "ms", Target(1.5)),
    ]


def http(b: Bench) -> list[Result]:
    from sessions_app.auth import create_key

    agent_id = b.manager.agent_id
    from sessions_app.models import Agent

    owner = Agent.objects.get(id=agent_id).owner
    _, raw_key = create_key(owner)
    client = Client(headers={"Authorization": f"Bearer {raw_key}"})
    manager = SessionManager.for_agent(agent_id)
    api_session = manager.get_session(manager.create("http").id)
    engine_session = manager.get_session(manager.create("engine").id)
    messages = b.corpus.conversation(b.sizes.branch_path)
    a_ms, r_ms = [], []
    clock = time.perf_counter
    url = f"/api/v1/sessions/{api_session.id}/messages"
    for m in messages:
        body = {"message": {"role": m["role"], "parts": m["parts"]}}
        t = clock()
        response = client.post(url, body, content_type="application/json")
        a_ms.append((clock() - t) * 1e3)
        t = clock()
        engine_session.append_message(m)
        r_ms.append((clock() - t) * 1e3)
        if response.status_code != 201:
            b.check(False, f"API append answered {response.status_code}")
            break
    history_url = f"/api/v1/sessions/{api_session.id}/history"
    a, r = alternate(lambda: client.get(history_url), engine_session.get_history, b.sizes.rounds)
    sqlite = connection.vendor == "sqlite"
    return [
        Result("http_append", "append through the JSON API (vs the engine call)",
               statistics.median(a_ms), statistics.median(r_ms), "ms/msg",
               Target(3.0) if sqlite else None),
        Result("http_history", f"history of {len(messages):,} through the JSON API (vs the engine call)",
               a * 1e3, r * 1e3, "ms", Target(1.3)),
    ]
