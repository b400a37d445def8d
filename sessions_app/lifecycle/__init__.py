"""Data lifecycle (issue 31): retention policies, erasure that reaches every copy of what
was deleted, the erasure log, `purge`, and the whole-agent export.

- actor.py      who a deletion is by (set at each door), for the erasure log
- erasure.py    what every deletion does besides removing rows: log, outbox, caches
- retention.py  which sessions a policy removes, and the policy run
- purge.py      clearing deleted content out of the database files (SQLite) or vacuuming
- worker.py     the server's own hourly policy run and purge, one worker at a time
- transfer.py   the whole-agent export as JSON Lines, and its import
"""
