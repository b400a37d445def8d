"""The benchmark code runs end to end at tiny sizes, so `make bench` cannot rot.

No timing assertions: only that every figure is produced, positive, and that Arbor
and the raw baseline read the same data.
"""

from __future__ import annotations

import pytest

from benchmarks.cases import Sizes
from benchmarks.report import as_json, table
from benchmarks.runner import run

TINY = Sizes(
    appends=50, sessions=3, per_session=40, branch_path=30, branches=5, branch_len=2,
    memory_lengths=(20, 50), flat_path=10, queries=4, rounds=1,
)
KEYS = {
    "append_p50", "append_mean", "get_history", "get_history_queries", "branch_read",
    "memory_history_20", "memory_history_50", "memory_per_message", "memory_flat",
    "search_session", "search_agent", "prompt_render", "set_context", "compaction_check",
    "compaction_check_queries", "history_10_overlays", "http_append", "http_history",
}


@pytest.mark.django_db
def test_benchmarks_produce_every_figure_beside_the_raw_baseline():
    results, problems = run(TINY, progress=lambda _: None)

    assert problems == []
    data = as_json(results)
    assert set(data) == KEYS
    for key, row in data.items():
        assert {"arbor", "baseline", "ratio", "unit"} <= set(row), key
        assert row["arbor"] > 0 and row["baseline"] > 0 and row["ratio"] > 0, key
    assert data["get_history_queries"]["arbor"] == 2
    assert "get_history" in table(results, title="smoke")
