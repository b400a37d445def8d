"""`python -m benchmarks [--quick] [--json]`: Arbor beside a raw-driver baseline (SPEC §14).

Runs on a throwaway database: a temporary SQLite file, or `arbor_bench` on the
PostgreSQL server that DATABASE_URL names. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from . import database


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument(
        "--json", action="store_true", help="print {name: {arbor, baseline, ratio, unit}}"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    url = os.environ.get("DATABASE_URL", "")  # before throwaway() points it at its own
    with database.throwaway() as vendor:
        from . import report, runner, semantic, semantic_api

        sizes = runner.QUICK if args.quick else runner.FULL
        results, problems = runner.run(sizes)
        # The recall set (benchmarks/recall/) in a process and database of its own, as
        # `python -m benchmarks.recall` runs it: BM25's word statistics are the database's,
        # so the 100,000 messages loaded above would move its figures (corrected fact first
        # 76.7% alone, 74.4% beside them: one question), and loaded first, it would move
        # the raw side's reference ranking, which lives in a file of its own.
        recall_set = subprocess.run(
            [sys.executable, "-m", "benchmarks.recall", "--bench"], stdout=subprocess.PIPE,
            text=True, check=False, env={**os.environ, "DATABASE_URL": url},
            cwd=Path(__file__).resolve().parent.parent)
        meaning = semantic.run(sizes.semantic_messages, runner._stderr)
        meaning += semantic_api.run(min(sizes.semantic_messages, semantic_api.MESSAGES),
                                    runner._stderr)
        version = _version(vendor)
    if args.json:
        print(report.dumps(results))
    else:
        title = (f"Arbor vs raw {'sqlite3' if vendor == 'sqlite' else 'psycopg'} on {version}"
                 f"{' (--quick)' if args.quick else ''}; python {platform.python_version()}, "
                 f"{time.perf_counter() - started:.0f}s")
        print(report.table(results, title=title))
        misses = report.misses(results)
        print(f"\n{len(misses)} target(s) missed{': ' + ', '.join(misses) if misses else ''}")
    print(f"\n{recall_set.stdout.rstrip()}", file=sys.stderr if args.json else sys.stdout)
    print("\n" + "\n".join(meaning), file=sys.stderr if args.json else sys.stdout)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    missed = recall_set.returncode != 0 or any("MISSED" in line for line in meaning)
    return report.exit_status(results, problems) or (1 if missed else 0)


def _version(vendor: str) -> str:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT sqlite_version()" if vendor == "sqlite" else "SHOW server_version")
        number = cur.fetchone()[0]
    return f"{'SQLite' if vendor == 'sqlite' else 'PostgreSQL'} {number}"


if __name__ == "__main__":
    sys.exit(main())
