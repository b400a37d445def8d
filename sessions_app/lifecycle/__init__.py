"""Data lifecycle (issue 31): retention policies and `purge`. What every deletion does
besides removing rows (the erasure log, the outbox, caches) is the storage's
(storage/erasure.py, with storage/actor.py: who a deletion is by); the whole-agent
export is the API's (api/agent_export.py).

- retention.py  which sessions a policy removes, and the policy run
- purge.py      clearing deleted content out of the database files (SQLite) or vacuuming
- worker.py     the server's own hourly policy run and purge, one worker at a time
"""
