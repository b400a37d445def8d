"""Data lifecycle (issue 31): retention policies and the server's upkeep. What every
deletion does besides removing rows (the erasure log, the outbox, caches) is the
storage's (storage/erasure.py, with storage/actor.py: who a deletion is by), as is
`purge` (storage/purge.py: vendor SQL); the whole-agent export is the API's
(api/agent_export.py).

- retention.py  which sessions a policy removes, and the policy run
- worker.py     the server's own hourly policy run and purge, one worker at a time
"""
