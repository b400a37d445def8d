"""`python -m benchmarks [--quick] [--json]`: Arbor beside a raw-driver baseline (SPEC §14).

Runs on a throwaway database: a temporary SQLite file, or `arbor_bench` on the
PostgreSQL server that DATABASE_URL names. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import platform
import sys
import time

from . import database


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for a smoke run")
    parser.add_argument(
        "--json", action="store_true", help="print {name: {arbor, baseline, ratio, unit}}"
    )
    args = parser.parse_args(argv)

    started = time.perf_counter()
    with database.throwaway() as vendor:
        from . import recall, report, runner, semantic, semantic_api

        sizes = runner.QUICK if args.quick else runner.FULL
        results, problems = runner.run(sizes)
        from sessions_app.semantic import config

        # the recall set (benchmarks/recall/): hybrid beside words alone when an embedder
        # is configured (the default), then search by meaning over one large agent
        recall_set = recall.run(runner._stderr, embedder=config.embedder())
        growth = ""
        if recall_set.words is not None:  # with an embedder: the set in a larger agent
            size = recall.GROWTH_DISTRACTORS
            growth = recall.run(runner._stderr, embedder=config.embedder(),
                                distractors=size).growth_line(size)
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
    print(f"\n{recall_set.table()}", file=sys.stderr if args.json else sys.stdout)
    if growth:
        print(growth, file=sys.stderr if args.json else sys.stdout)
    print("\n" + "\n".join(meaning), file=sys.stderr if args.json else sys.stdout)
    for problem in problems:
        print(f"PROBLEM: {problem}", file=sys.stderr)
    missed = recall_set.misses or any("MISSED" in line for line in meaning)
    return report.exit_status(results, problems) or (1 if missed else 0)


def _version(vendor: str) -> str:
    from django.db import connection

    with connection.cursor() as cur:
        cur.execute("SELECT sqlite_version()" if vendor == "sqlite" else "SHOW server_version")
        number = cur.fetchone()[0]
    return f"{'SQLite' if vendor == 'sqlite' else 'PostgreSQL'} {number}"


if __name__ == "__main__":
    sys.exit(main())
