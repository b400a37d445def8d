"""Memory of a history read: proportional to the path read, flat in what is stored.

Peak Python heap during one read (tracemalloc), result included, for paths of
several lengths; then the same short path read from a small and a large session.
tracemalloc sees Python objects only (what a read builds); the database's own page
cache is bounded by its settings, not by the session's size.
"""

from __future__ import annotations

import gc
import tracemalloc
from collections.abc import Callable
from typing import Any

from memory_core import Session

from .cases import Bench
from .report import Result, Target

KIB = 1024


def peak(fn: Callable[[], Any]) -> float:
    """Peak traced KiB while `fn` runs and its result is alive (after one warm-up)."""
    fn()
    gc.collect()
    tracing = tracemalloc.is_tracing()  # e.g. under pytest -X tracemalloc: leave it on
    if tracing:
        tracemalloc.reset_peak()
    else:
        tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        result = fn()
        _, top = tracemalloc.get_traced_memory()
    finally:
        if not tracing:
            tracemalloc.stop()
    del result
    return (top - before) / KIB


def memory(b: Bench) -> list[Result]:
    lengths = sorted(b.sizes.memory_lengths)
    flat = min(b.sizes.flat_path, lengths[0])
    results: list[Result] = []
    sessions: dict[int, tuple[Session, str, str, str]] = {}
    for n in lengths:
        session, sid = b.pair(f"memory {n}")
        ids_a, ids_r = b.load(session, b.corpus.conversation(n))
        sessions[n] = (session, sid, ids_a[flat - 1], ids_r[flat - 1])
        a = peak(session.get_history)
        r = peak(lambda sid=sid: b.raw.path(sid))
        results.append(Result(f"memory_history_{n}", f"peak heap, get_history of {n:,} msgs",
                              a, r, "KiB"))
    small, large = results[0], results[-1]
    per_a = (large.arbor / lengths[-1]) / (small.arbor / lengths[0])
    per_r = (large.baseline / lengths[-1]) / (small.baseline / lengths[0])
    results.append(Result(
        "memory_per_message", f"heap per message, {lengths[-1]:,}- vs {lengths[0]:,}-msg path",
        per_a, per_r, "×", Target(1.25, of_ratio=False),
    ))
    reads = {}
    for n in (lengths[0], lengths[-1]):
        session, sid, leaf_a, leaf_r = sessions[n]
        reads[n] = (peak(lambda s=session, leaf=leaf_a: s.get_history(leaf)),
                    peak(lambda sid=sid, leaf=leaf_r: b.raw.path(sid, leaf)))
    (a_small, r_small), (a_large, r_large) = reads[lengths[0]], reads[lengths[-1]]
    results.append(Result(
        "memory_flat",
        f"heap, {flat}-msg path in {lengths[-1]:,}- vs {lengths[0]:,}-msg session",
        a_large / a_small, r_large / r_small, "×", Target(1.10, of_ratio=False),
    ))
    return results
