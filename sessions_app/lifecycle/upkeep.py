"""The periodic jobs every worker offers to run and one runs at a time (jobs.exclusive):
outbox pruning and auto-compaction retries here; retention and purges in
lifecycle/worker.py, whose thread runs them all (PERIODIC there).

Each job is idempotent and cheap when there is nothing to do, so a worker may run it right
after another one did.
"""

from __future__ import annotations

import logging

from django.utils import timezone

from .. import models
from ..live import events
from ..storage import outbox

log = logging.getLogger(__name__)

RETRY_BATCH = 20  # compactions retried per run

def prune_outbox() -> int:
    """Outbox rows past each session's retention (ARBOR_EVENT_RETENTION), deleted in
    batches of sessions, one short transaction each; how many. Writes prune as they go,
    every PRUNE_EVERY events; this catches what they leave: up to PRUNE_EVERY rows a
    session, and every row past a lowered retention."""
    return outbox.prune_past(events.retention())


def retry_compactions() -> int:
    """Sessions whose automatic compaction failed and whose cooldown is over are checked
    again now, not only at their next append (a quiet session otherwise stays over its
    threshold, in `error`, until someone writes). Only where the process's sessions compact
    automatically (ARBOR_COMPACT_AFTER); a failure starts a new cooldown. How many tried."""
    from memory_core.autocompact import maybe_compact

    from ..access import manager_for

    due = list(models.Session.objects
               .filter(compaction_retry_at__lte=timezone.now())
               .exclude(compaction_error="")
               .exclude(status__in=("thinking", "compacting"))
               .order_by("compaction_retry_at")
               .values_list("id", "agent_id")[:RETRY_BATCH])
    tried = 0
    for session_id, agent_id in due:
        manager = manager_for(agent_id)
        if manager.config.compact_threshold is None:
            continue
        session = manager.get_session(session_id)
        maybe_compact(session)  # never raises: a failure is stored with a new cooldown
        tried += 1
        _, _, retry_at = manager.storage.compaction_state(session_id)
        if retry_at is not None and retry_at <= timezone.now():
            # Neither failed again nor compacted: under its threshold now (say compacted
            # by hand), so nothing is left to retry.
            manager.storage.set_compaction_state(session_id, error="", failed_at=None,
                                                 retry_at=None)
    return tried
