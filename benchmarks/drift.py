"""Keeps the baselines honest: they must run the statements Arbor runs, as written.

Arbor's statements are captured with a Django execute wrapper, the baseline's with
its recording cursor; both are compared after normalising whitespace, `?` to `%s` and
`%%` to `%`.
Statement text comes from sessions_app/storage/sql.py; when the storage or storage/vendors/
change which statements an operation runs, the baseline must change with them,
or the ratios would compare different work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import connection

from sessions_app.storage import path_cache

from .cases import Bench

_TRANSACTION = ("BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def _normal(sql: str) -> str:
    return " ".join(sql.replace("%%", "%").replace("?", "%s").split())


def _arbor(fn: Callable[[], Any]) -> tuple[list[str], Any]:
    log: list[str] = []

    def record(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        log.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        result = fn()
    return [_normal(s) for s in log if not s.strip().upper().startswith(_TRANSACTION)], result


def _raw(b: Bench, fn: Callable[[], Any]) -> tuple[list[str], Any]:
    with b.raw.recording() as log:
        result = fn()
    return [_normal(s) for s in log if not s.strip().upper().startswith(_TRANSACTION)], result


def _compare(b: Bench, op: str, arbor: list[str], raw: list[str]) -> None:
    if arbor == raw:
        return
    pairs = list(zip(arbor, raw, strict=False))
    first = next((i for i, (a, r) in enumerate(pairs) if a != r), len(pairs))
    a = arbor[first] if first < len(arbor) else "(nothing)"
    r = raw[first] if first < len(raw) else "(nothing)"
    b.problems.append(
        f"the baseline no longer runs Arbor's SQL for {op} (update "
        f"benchmarks/baseline_{connection.vendor}.py); statement {first + 1}:\n"
        f"  arbor:    {a[:400]}\n  baseline: {r[:400]}"
    )


def check(b: Bench) -> None:
    """Append (empty and non-empty session) and both path reads, on both sides."""
    session, sid = b.pair("drift")
    first, second = b.corpus.conversation(2)
    for op, message in (("append to an empty session", first), ("append", second)):
        arbor, stored = _arbor(lambda m=message: session.append_message(m))
        raw, raw_id = _raw(b, lambda m=message: b.raw.append(sid, m))
        _compare(b, op, arbor, raw)
    path_cache.paths.clear()  # the statements of a first read (a repeat is one of them)
    arbor, _ = _arbor(session.get_history)
    raw, _ = _raw(b, lambda: b.raw.path(sid))
    _compare(b, "get_history()", arbor, raw)
    arbor, _ = _arbor(lambda: session.get_history(stored.id))
    raw, _ = _raw(b, lambda: b.raw.path(sid, raw_id))
    _compare(b, "get_history(leaf_id)", arbor, raw)
    # Search is not compared: its baseline is the raw design an app would write, not
    # Arbor's statements (cases.search checks Arbor's answers against the slow ranking).
