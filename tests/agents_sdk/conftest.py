"""The OpenAI Agents SDK's own session tests, run against `ArborSession`.

The SDK's test files are not copied into this repository: at collection time they are
taken from the SDK's source release on PyPI at the installed version (`pip download
openai-agents==<version> --no-binary :all:`, cached in the git-ignored `upstream/`), with
one change: the session constructors they import (`SQLiteSession`, `AsyncSQLiteSession`)
come from `swap.py`, which builds an `ArborSession` (an `AsyncArborSession` for the async
one; its tests also run a second time on `ArborSession`) on a live Arbor server on loopback.
Their `tests.*` helper imports are pointed at the fetched copies. Tests that reach into
SQLite itself (connections, file locks, corrupt rows written with SQL, subclass hooks)
are skipped, each with its reason in SKIPS. Without network the directory is skipped
(CI fails instead: see test_upstream.py).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

os.environ.setdefault("OPENAI_AGENTS_DISABLE_TRACING", "1")

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "upstream"
VERSION = importlib.metadata.version("openai-agents")
# fetched file -> (its path in the SDK's release, the constructor it gets from swap.py)
FILES = {
    "test_responses.py": ("tests/test_responses.py", None),
    "model_test_helpers.py": ("tests/model_test_helpers.py", None),
    "utils/__init__.py": (None, None),
    "utils/factories.py": ("tests/utils/factories.py", None),
    "utils/hitl.py": ("tests/utils/hitl.py", None),
    "utils/simple_session.py": ("tests/utils/simple_session.py", None),
    "test_session.py": ("tests/memory/test_session.py", "SQLiteSession"),
    "test_session_limit.py": ("tests/memory/test_session_limit.py", "SQLiteSession"),
    "test_async_sqlite_session.py": ("tests/extensions/memory/test_async_sqlite_session.py",
                                     "AsyncSQLiteSession"),
    # the same tests again on ArborSession itself: its close() works awaited too
    "test_async_sqlite_session_on_arbor_session.py": (
        "tests/extensions/memory/test_async_sqlite_session.py",
        "ArborSessionAsAsync as AsyncSQLiteSession"),
}
# The Runner's tests: only those that use SQLiteSession are kept (the rest of each file,
# its imports and helpers, stays as it is).
RUNNER_FILES = ["test_agent_runner.py", "test_agent_runner_streamed.py", "test_soft_cancel.py",
                "test_run_impl_resume_paths.py", "test_tool_batch_failure_history.py",
                "test_tool_failure_boundaries.py", "test_programmatic_tool_calling.py"]
FILES.update({name: (f"tests/{name}", "SQLiteSession") for name in RUNNER_FILES})
# the SDK's test helpers, at their fetched place (tests.memory.test_session is fetched flat)
IMPORTS = (r"\bfrom tests\.(?:memory\.)?", "from tests.agents_sdk.upstream.")
_CONN = "SQLite internals: the session's sqlite3 connections and their worker threads"
_ROWS = "SQLite internals: writes corrupt rows straight into the SDK's SQLite tables"
_LOCK = "SQLite internals: holds the database file's write lock from another connection"
_HOOK = "SQLite internals: subclasses AsyncSQLiteSession's connection/schema hooks"
_WAL = "SQLite internals: patches aiosqlite to fail the WAL/schema start-up"
_FAIL = "SQLite internals: patches the connection to fail or cancel mid-transaction"
SKIPS: dict[str, str] = {  # test name -> why it does not apply to a server-backed session
    "test_sqlite_session_close_closes_worker_thread_connections": _CONN,
    "test_sqlite_session_reaps_connections_from_exited_worker_threads": _CONN,
    "test_sqlite_session_closes_retired_connections_before_the_next_allocation": _CONN,
    "test_sqlite_session_keeps_connections_of_live_worker_threads": _CONN,
    "test_sqlite_session_pop_item_skips_corrupt_most_recent": _ROWS,
    "test_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _ROWS,
    "test_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _ROWS,
    "test_sqlite_session_get_items_session_settings_limit_skips_corrupt_rows": _ROWS,
    "test_sqlite_session_file_lock_is_shared_across_instances":
        "SQLite internals: the per-file lock table of SQLiteSession",
    "test_sqlite_session_failed_add_items_releases_write_lock": _LOCK,
    "test_sqlite_session_failed_clear_session_rolls_back": _LOCK,
    "test_sqlite_session_failed_pop_item_releases_write_lock": _LOCK,
    "test_sqlite_session_rollback_failure_evicts_connection": _FAIL,
    "test_sqlite_session_close_retries_quarantined_connection": _FAIL,
    "test_sqlite_session_post_commit_cancellation_propagates_after_known_outcome": _FAIL,
    "test_async_sqlite_session_pop_item_skips_corrupt_most_recent": _ROWS,
    "test_async_sqlite_session_pop_item_returns_none_after_dropping_only_corrupt_rows": _ROWS,
    "test_async_sqlite_session_get_items_limit_skips_corrupt_newest_rows": _ROWS,
    "test_async_sqlite_session_get_items_same_timestamp_consistent_order":
        "SQLite internals: rewrites the created_at column of the SDK's table",
    "test_async_sqlite_session_pop_item_same_timestamp_returns_latest":
        "SQLite internals: rewrites the created_at column of the SDK's table",
    "test_cancelled_close_finishes_cleanup_and_propagates_cancellation": _CONN,
    "test_post_commit_cancellation_propagates_after_known_mutation_outcome": _FAIL,
    "test_failed_add_items_rolls_back_and_reuses_connection": _FAIL,
    "test_failed_clear_session_rolls_back": _LOCK,
    "test_failed_pop_item_releases_write_lock": _LOCK,
    "test_failed_initialization_closes_candidate_connection": _HOOK,
    "test_initialization_retries_transient_wal_lock": _WAL,
    "test_initialization_releases_wal_cursor_before_schema_write": _HOOK,
    "test_initialization_does_not_retry_unrecoverable_wal_errors": _WAL,
    "test_cancelled_wal_retry_closes_startup_connection": _WAL,
    "test_cancelled_add_items_rolls_back_write_transaction": _FAIL,
    "test_operation_failure_then_cancellation_during_rollback": _FAIL,
    "test_rollback_failure_closes_and_evicts_connection": _FAIL,
    "test_close_retries_connection_quarantined_after_rollback_failure": _FAIL,
    "test_close_retries_quarantined_failed_initialization_candidate": _HOOK,
    "test_cancelled_initialization_finishes_candidate_close": _HOOK,
    "test_initialization_failure_then_cancellation_during_candidate_close": _HOOK,
    "test_cancelled_connect_closes_eventually_acquired_connection": _CONN,
    "test_partial_history_freezes_accepted_output_before_metadata":
        "imports test_native_tool_failure_history, which needs the SDK's MCP test fixtures",
    "test_handoff_resume_after_cancelled_compaction_commits":
        "SQLite internals: patches SQLiteSession._insert_items, its SQL insert",
}


def _only_session_tests(source: str) -> str:
    """The module without its top-level tests that do not use SQLiteSession."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    for node in reversed(tree.body):
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name.startswith("test")
                and "SQLiteSession" not in (ast.get_source_segment(source, node) or "")):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            del lines[start - 1:node.end_lineno]
    return "".join(lines)


def _rewrite(name: str, source: str, constructor: str | None) -> str:
    source = re.sub(IMPORTS[0], IMPORTS[1], source)
    if name in RUNNER_FILES:
        source = _only_session_tests(source)
    if constructor is None:
        return source
    tree = ast.parse(source)
    last = max(n.end_lineno or 0 for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom)))
    lines = source.splitlines(keepends=True)
    swap_line = (f"from tests.agents_sdk.swap import {constructor}  "
                 "# the one change: an ArborSession on a live Arbor server\n")
    return "".join(lines[:last]) + swap_line + "".join(lines[last:])


def _fingerprint() -> str:
    return hashlib.sha256(f"{VERSION}\n{FILES}\n{IMPORTS}\nconftest 7".encode()).hexdigest()[:16]


def fetch_upstream() -> str | None:
    """Materialise the SDK's test files; None when done, else why it could not be."""
    stamp = UPSTREAM / "FETCHED"
    if stamp.exists() and stamp.read_text() == _fingerprint():
        return None
    UPSTREAM.mkdir(exist_ok=True)
    archive = UPSTREAM / f"openai_agents-{VERSION}.tar.gz"
    if not archive.exists():
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", f"openai-agents=={VERSION}", "--no-deps",
             "--no-binary", ":all:", "--quiet", "-d", str(UPSTREAM)],
            capture_output=True, text=True, timeout=300)
        if done.returncode != 0 or not archive.exists():
            return f"could not download openai-agents {VERSION}'s source: {done.stderr[-500:]}"
    for old in UPSTREAM.glob("test_*.py"):  # from an earlier selection
        old.unlink()
    with tarfile.open(archive) as tar:
        for name, (inside, constructor) in FILES.items():
            target = UPSTREAM / name
            target.parent.mkdir(exist_ok=True)
            if inside is None:
                target.write_text("")
                continue
            try:
                member = tar.extractfile(f"openai_agents-{VERSION}/{inside}")
            except KeyError:
                member = None
            if member is None:
                return f"{inside} is not in openai-agents {VERSION}'s source"
            target.write_text(_rewrite(name, member.read().decode(), constructor))
    (UPSTREAM / "__init__.py").write_text("")
    (UPSTREAM / "conftest.py").write_text(
        "from tests.agents_sdk.swap import arbor_server  # noqa: F401  (autouse)\n")
    (UPSTREAM / "LICENSE.md").write_text(
        f"Test files of openai-agents {VERSION} (MIT License, (c) OpenAI), fetched from PyPI "
        "by ../conftest.py; not part of this repository.\n")
    stamp.write_text(_fingerprint())
    return None


FETCH_PROBLEM = fetch_upstream()
collect_ignore = ["upstream"] if FETCH_PROBLEM else []


def pytest_collection_modifyitems(config, items):
    for item in items:
        if "agents_sdk/upstream" not in str(item.path).replace(os.sep, "/"):
            continue
        reason = SKIPS.get(item.originalname)
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))
