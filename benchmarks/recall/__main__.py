"""`python -m benchmarks.recall [--misses]`: the recall set alone, on a throwaway database."""

from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.recall", description=__doc__)
    parser.add_argument("--misses", action="store_true",
                        help="list the questions whose answer is not the top hit")
    parser.add_argument("--distractors", type=int, default=0, metavar="N",
                        help="load N real sentences that answer nothing beside the set "
                             "(a larger agent; benchmarks/recall/distractors.py)")
    parser.add_argument("--bench", action="store_true",
                        help="what `make bench` prints: the table, then with an embedder "
                             "the set beside GROWTH_DISTRACTORS sentences in one line")
    args = parser.parse_args(argv)
    from .. import database

    # Its own throwaway database, so the `make bench` that runs it (or runs beside it)
    # keeps its own: on Postgres, dropping a database ends every connection to it.
    with database.throwaway(f"arbor_recall_{os.getpid()}"):
        from sessions_app.semantic import config

        from . import harness

        report = harness.run(lambda m: print(m, file=sys.stderr), embedder=config.embedder(),
                             distractors=args.distractors)
        growth = ""
        if args.bench and report.words is not None:
            size = harness.GROWTH_DISTRACTORS
            growth = harness.run(lambda m: print(m, file=sys.stderr),
                                 embedder=config.embedder(), distractors=size).growth_line(size)
    if args.misses:
        print(report.misses_text())
    print(report.table())
    if args.bench and growth:
        print(growth)
    return 1 if report.misses else 0


if __name__ == "__main__":
    sys.exit(main())
