"""The JSON API's search-by-meaning benchmark runs end to end (`make bench` cannot rot)."""

from __future__ import annotations


def test_the_api_search_benchmark_runs_end_to_end(db, fake_embeddings):
    from benchmarks import semantic_api

    lines = semantic_api.run(300, lambda _m: None)
    assert "through the JSON API" in lines[0] and "one agent of 300 messages" in lines[0]
    assert "MISSED" not in lines[0]  # the search answered, by words and meaning
    assert lines[-1].startswith("  target: p50 <= 20 ms:")
