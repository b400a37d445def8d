"""The benchmark code runs end to end at tiny sizes, so `make bench` cannot rot.

No timing assertions: only that every figure is produced, positive, and that Arbor
and the raw baseline read the same data.
"""

from __future__ import annotations

import os

import pytest
from django.db import connection

from benchmarks.cases import Sizes
from benchmarks.report import Result, Target, as_json, exit_status, misses, table
from benchmarks.runner import run

TINY = Sizes(
    appends=50, sessions=3, per_session=40, branch_path=30, branches=5, branch_len=2,
    memory_lengths=(20, 50), flat_path=10, queries=4, rounds=1, live_appends=50,
)
KEYS = {
    "append_p50", "append_mean", "append_p50_peer", "append_p99", "get_history_peer",
    "get_history_cold",
    "get_history", "get_history_queries", "branch_read",
    "memory_history_20", "memory_history_50", "memory_per_message", "memory_flat",
    "search_session", "search_agent", "search_session_ranked", "search_agent_ranked",
    "search_session_sql", "search_agent_sql", "prompt_render", "set_context", "compaction_check",
    "compaction_check_queries", "history_10_overlays", "http_append", "http_history",
    "live_append_10", "live_append_100", "live_append_100_burst", "fan_out_one_p50",
    "fan_out_one_p99", "chat_page", "live_tabs_render", "live_tabs_queries",
    "bulk_append_all", "bulk_batch_api", "bulk_fork", "bulk_import_arbor", "bulk_import_chatgpt",
}
ACROSS_WORKERS = {"fan_out_two_p50", "fan_out_two_p99"}  # only where Redis answers
SQLITE_ONLY = {"db_size", "db_size_burst"}  # the files on disk beside SQLiteSession's


@pytest.mark.django_db(transaction=True)  # the live-events part serves it from daphne
def test_benchmarks_produce_every_figure_beside_the_raw_baseline():
    results, problems = run(TINY, progress=lambda _: None)

    assert problems == []
    data = as_json(results)
    keys = KEYS | (SQLITE_ONLY if connection.vendor == "sqlite" else set())
    assert keys <= set(data) <= keys | ACROSS_WORKERS
    if os.environ.get("CI"):
        assert ACROSS_WORKERS <= set(data)  # CI has Redis
    for key, row in data.items():
        assert {"arbor", "baseline", "ratio", "unit"} <= set(row), key
        assert row["arbor"] > 0 and row["baseline"] > 0 and row["ratio"] > 0, key
    assert data["get_history_queries"]["arbor"] == 2
    assert "get_history" in table(results, title="smoke")


def test_a_missed_target_makes_the_exit_status_non_zero():
    within = Result("append_p50", "append", arbor=1.0, baseline=1.0, unit="ms",
                    target=Target(2.0))
    missed = Result("get_history", "history", arbor=3.0, baseline=1.0, unit="ms",
                    target=Target(2.0))
    untargeted = Result("http_append", "http", arbor=9.0, baseline=1.0, unit="ms")

    assert exit_status([within, untargeted], []) == 0
    assert exit_status([within, missed, untargeted], []) == 1
    assert exit_status([within], ["Arbor and baseline disagree"]) == 1
    assert misses([within, missed]) == ["get_history"]
