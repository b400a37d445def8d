"""A large agent's scan picks the rows it scores exactly by their signs (vector_index.py):
the hits must be the exact scan's, within a scope too, and rows appended later are coded."""

from __future__ import annotations

import numpy as np
import pytest

from sessions_app.storage import vector_index as index
from sessions_app.storage import vectors


def _stored(rows: np.ndarray, start: int = 1) -> list[tuple[int, int, int, int, float, bytes]]:
    """Rows as vectors.rows_after reads them: (id, seq, session key, dim, scale, int8)."""
    out = []
    for n, v in enumerate(rows, start=start):
        dim, scale, data = vectors.quantise(v)
        out.append((n, n, n % 7, dim, scale, data))
    return out


def _like_a_model(count: int, rng: np.random.Generator, dim: int = 64) -> np.ndarray:
    """Unit vectors crowded around a shared direction, in topics, as a text model's are
    (cosines between 0.7 and 0.9), not spread over the sphere."""
    common = rng.standard_normal(dim)
    topics = rng.standard_normal((40, dim))
    made = (3 * common + topics[rng.integers(0, 40, count)]
            + 0.8 * rng.standard_normal((count, dim)))
    return (made / np.linalg.norm(made, axis=1, keepdims=True)).astype(np.float32)


def _exact(found: index.AgentVectors, query: np.ndarray, limit: int,
           keep: np.ndarray | None = None) -> list[int]:
    scores = found.matrix[:found.size] @ query
    if keep is not None:
        scores = np.where(keep, scores, -np.inf)
    order = np.lexsort((np.arange(found.size), -scores))[:limit]
    return found.seqs[order].tolist()


@pytest.fixture
def small_prefilter(monkeypatch):
    monkeypatch.setattr(index, "PREFILTER_FROM", 500)
    monkeypatch.setattr(index, "RESCORE_MIN", 200)
    monkeypatch.setattr(index, "RESCORE_FACTOR", 10)


def test_the_sign_step_keeps_the_exact_nearest(small_prefilter):
    rng = np.random.default_rng(3)
    made = _like_a_model(4_030, rng)  # questions from the same model as the messages
    found = index.AgentVectors()
    found.add(_stored(made[:4_000]))
    assert found.coded == 0  # codes are made by the first scan that wants them
    queries = made[4_000:]
    agree = sum(
        [s for s, _ in index.nearest(found, q, limit=10)] == _exact(found, q, 10)
        for q in queries)
    assert found.coded == found.size
    assert agree >= 29  # 200 of 4,000 rows rescored: the exact top 10 are among them


def test_the_sign_step_respects_the_scope_and_appended_rows(small_prefilter):
    rng = np.random.default_rng(5)
    made = _like_a_model(3_000, rng)
    found = index.AgentVectors()
    found.add(_stored(made[:2_000]))
    query = made[2_500] + 0.01 * rng.standard_normal(64).astype(np.float32)
    query /= np.linalg.norm(query)
    index.nearest(found, query, limit=5)
    found.add(_stored(made[2_000:], start=2_001))  # past the coded rows: coded at the next scan
    hits = index.nearest(found, query, limit=5)
    assert hits[0][0] == 2_501 and found.coded == 3_000
    session = index.nearest(found, query, limit=5, session_key=3)
    assert session and all(s % 7 == 3 for s, _ in session)
    assert [s for s, _ in session] == _exact(found, query, 5, found.sessions[:found.size] == 3)
    others = index.nearest(found, query, limit=5, exclude_key=2_501 % 7)
    assert all(s % 7 != 2_501 % 7 for s, _ in others)


def test_a_small_agent_is_scanned_exactly():
    rng = np.random.default_rng(9)
    made = _like_a_model(301, rng)
    found = index.AgentVectors()
    found.add(_stored(made[:300]))
    query = made[300]
    assert [s for s, _ in index.nearest(found, query, limit=20)] == _exact(found, query, 20)
    assert found.coded == 0
