"""`python -m benchmarks.scale`: does one agent's work cost the same whatever other agents
store? (issue 27)

A probe agent holds PROBE_SESSIONS sessions of 500 messages that never change; other
agents grow in steps (total messages in the database: 50k, 150k, 300k, 500k by default)
with Zipf-distributed chat text (scale_load.py). After each step the probe's operations
are timed: append p50/p99 (appends to a scratch session, removed after), a 500-message
history, a search in one session, an agent-wide search (queries of one rarer and two
common words), with the database's bytes per message and the step's load rate. The
table ends with the last step's figure over the first's for each; a ratio above 1.5
(for the load rate: the first over the last) fails the run.

Runs on a throwaway database: a temporary SQLite file, or `arbor_scale` on the
PostgreSQL server DATABASE_URL names (`--keep` leaves it, for EXPLAIN). Only autovacuum
runs on Postgres, as in a live service (where the server has it off, the run does its
work in its stead: class Autovacuum). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_RATIO = 1.5
DEFAULT_STEPS = (50_000, 150_000, 300_000, 500_000)
QUICK_STEPS = (20_000, 60_000)
PROBE_SESSIONS, PROBE_LEN = 25, 500
APPENDS = 200
QUERIES = 12
ROUNDS = 3  # each query is timed this many times; the median counts
COLUMNS = (  # (key, heading, format, whether a larger figure is worse)
    ("append_p50", "append p50 ms", "{:.2f}", True),
    ("append_p99", "append p99 ms", "{:.2f}", True),
    ("history", "500-msg history ms", "{:.2f}", True),
    ("search_session", "session search ms", "{:.2f}", True),
    ("search_agent", "agent search ms", "{:.2f}", True),
    ("bytes_per_message", "DB bytes/msg", "{:,.0f}", True),
    ("load_rate", "load msg/s", "{:,.0f}", False),
)


@dataclass
class Row:
    messages: int
    figures: dict[str, float] = field(default_factory=dict)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _ms(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return (time.perf_counter() - started) * 1000


def _median_ms(fn: Callable[[], Any], rounds: int = ROUNDS) -> float:
    return statistics.median(_ms(fn) for _ in range(rounds))


def queries(words: Sequence[str], count: int = QUERIES) -> list[str]:
    """One rarer word (rank 2,000 to 20,000 of the Zipf vocabulary) and two common ones
    (ranks 30 to 150, past the stop words a query drops)."""
    from memory_core.stop_words import QUERY_STOP_WORDS

    common = [w for w in words[30:150] if "'" not in w and w not in QUERY_STOP_WORDS]
    rare = list(words[2_000:20_000])
    return [f"{common[(7 * i) % len(common)]} {rare[(977 * i) % len(rare)]} "
            f"{common[(13 * i + 5) % len(common)]}" for i in range(count)]


def database_bytes(vendor: str) -> int:
    from django.db import connection

    if vendor == "sqlite":
        path = str(connection.settings_dict["NAME"])
        return sum(os.path.getsize(path + s) for s in ("", "-wal") if os.path.exists(path + s))
    with connection.cursor() as cur:
        cur.execute("SELECT pg_database_size(current_database())")
        return int(cur.fetchone()[0])


def message_total() -> int:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT count(*) FROM arbor_message")
        return int(cur.fetchone()[0])


class Probe:
    """The agent of fixed size whose operations are timed."""

    def __init__(self, loader: Any) -> None:
        from memory_core import SessionManager

        from .scale_load import make_agent

        self.manager = SessionManager.for_agent(make_agent("scale-probe", "probe"))
        self.session_ids = [loader.session(self.manager, f"probe {i}", PROBE_LEN)
                            for i in range(PROBE_SESSIONS)]
        self.queries = queries(loader.corpus.words)
        self.loader = loader

    def measure(self, vendor: str) -> dict[str, float]:
        m = self.manager
        figures: dict[str, float] = {}
        scratch = m.create("scratch")
        session = m.get_session(scratch.id)
        bodies = self.loader.corpus.conversation(APPENDS)
        times = sorted(_ms(lambda b=b: session.append_message(b)) for b in bodies)
        figures["append_p50"] = times[len(times) // 2]
        figures["append_p99"] = times[min(len(times) - 1, int(len(times) * 0.99))]
        m.delete(scratch.id)
        sessions = [m.get_session(i) for i in self.session_ids]
        figures["history"] = statistics.median(
            _median_ms(lambda s=s: s.get_history()) for s in sessions[:5])
        figures["search_session"] = statistics.median(
            _median_ms(lambda q=q, s=s: s.search(q))
            for q, s in zip(self.queries, itertools.cycle(sessions), strict=False))
        figures["search_agent"] = statistics.median(
            _median_ms(lambda q=q: m.search(q)) for q in self.queries)
        figures["bytes_per_message"] = database_bytes(vendor) / message_total()
        return figures


class Autovacuum:
    """Postgres with autovacuum off (some test servers): what it would do, run by hand.
    Once a minute (autovacuum_naptime) each table whose dead rows passed its threshold
    (50 + 20% of its live rows, the defaults) is vacuumed and analysed, so dead row
    versions are reclaimed as in a live service. Does nothing where autovacuum is on."""

    NAPTIME = 60.0

    def __init__(self) -> None:
        from django.db import connection

        self.on = connection.vendor == "postgresql" and self._setting() == "off"
        self.last = time.monotonic()
        self.runs = 0

    @staticmethod
    def _setting() -> str:
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SHOW autovacuum")
            return str(cur.fetchone()[0])

    def __call__(self, force: bool = False) -> None:
        if not self.on or (not force and time.monotonic() - self.last < self.NAPTIME):
            return
        from django.db import connection

        with connection.cursor() as cur:
            cur.execute("SELECT relname FROM pg_stat_user_tables "
                        "WHERE n_dead_tup > 50 + 0.2 * n_live_tup "
                        "OR n_mod_since_analyze > 50 + 0.1 * n_live_tup")
            for (table,) in cur.fetchall():
                cur.execute(f'VACUUM (ANALYZE) "{table}"')
        self.last = time.monotonic()
        self.runs += 1


def table(rows: Sequence[Row], title: str) -> str:
    head = ["messages", *(c[1] for c in COLUMNS)]
    body = [[f"{r.messages:,}", *(fmt.format(r.figures[k]) for k, _, fmt, _ in COLUMNS)]
            for r in rows]
    body.append(["last/first", *(f"{ratio:.2f}" for ratio in ratios(rows).values())])
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    lines = [title, " | ".join(h.rjust(w) for h, w in zip(head, widths, strict=True)),
             "-+-".join("-" * w for w in widths)]
    lines += [" | ".join(c.rjust(w) for c, w in zip(line, widths, strict=True)) for line in body]
    return "\n".join(lines)


def ratios(rows: Sequence[Row]) -> dict[str, float]:
    """Last step over first for each figure (first over last where larger is better)."""
    first, last = rows[0].figures, rows[-1].figures
    return {k: (last[k] / first[k] if worse else first[k] / last[k])
            for k, _, _, worse in COLUMNS}


def failures(rows: Sequence[Row], limit: float = MAX_RATIO) -> list[str]:
    return [f"{k} {r:.2f}x" for k, r in ratios(rows).items() if r > limit] if len(rows) > 1 else []


def run(steps: Sequence[int], progress: Callable[[str], None] = _stderr,
        seed: int = 27) -> tuple[str, list[Row]]:
    from django.db import connection

    from .scale_load import Loader, Others

    vendor = connection.vendor
    loader = Loader(seed)
    progress(f"probe agent: {PROBE_SESSIONS} sessions of {PROBE_LEN}")
    probe = Probe(loader)
    others = Others(loader)
    upkeep = Autovacuum()
    if upkeep.on:
        progress("autovacuum is off on this server: the run does its work once a minute")
    rows: list[Row] = []
    for target in steps:
        missing = target - message_total()
        progress(f"growing other agents by {max(missing, 0):,} to {target:,} messages")
        rate = others.grow(missing, progress, upkeep) if missing > 0 else float("nan")
        upkeep()
        figures = probe.measure(vendor)
        figures["load_rate"] = rate
        rows.append(Row(message_total(), figures))
        progress("  " + ", ".join(f"{k} {v:,.2f}" for k, v in figures.items()))
    return vendor, rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.scale", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", help="comma-separated database sizes, e.g. 50000,150000")
    parser.add_argument("--max", type=int, help="the largest size (steps up to it, as the "
                        "default's proportions: 10%%, 30%%, 60%%, 100%%)")
    parser.add_argument("--quick", action="store_true", help=f"steps {QUICK_STEPS}")
    parser.add_argument("--keep", action="store_true", help="leave the database behind")
    args = parser.parse_args(argv)
    if args.steps:
        steps: Sequence[int] = [int(s) for s in args.steps.split(",")]
    elif args.max:
        steps = [args.max * p // 10 for p in (1, 3, 6, 10)]
    else:
        steps = QUICK_STEPS if args.quick else DEFAULT_STEPS
    from . import database

    started = time.perf_counter()
    with database.throwaway(name=os.environ.get("ARBOR_SCALE_DB", "arbor_scale"),
                            keep=args.keep) as vendor:
        vendor, rows = run(steps)
    name = "SQLite" if vendor == "sqlite" else "PostgreSQL"
    print(table(rows, f"benchmarks.scale on {name}: the probe agent ({PROBE_SESSIONS} x "
                      f"{PROBE_LEN} messages) as other agents grow; "
                      f"{time.perf_counter() - started:.0f}s"))
    failed = failures(rows)
    print(f"\n{len(failed)} ratio(s) above {MAX_RATIO}{': ' + ', '.join(failed) if failed else ''}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
