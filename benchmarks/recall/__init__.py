"""The recall set: agent-phrased questions over sessions written for Arbor's search.

`python -m benchmarks.recall` runs it alone on a throwaway database (SQLite, or the
PostgreSQL server DATABASE_URL names); `make bench` runs it so (`--bench`) in a process and database of its own.
The data is in sessions_*.json beside this file; harness.py says how it is read.
"""

from .harness import GROWTH_DISTRACTORS, Report, evaluate, run

__all__ = ["GROWTH_DISTRACTORS", "Report", "evaluate", "run"]
