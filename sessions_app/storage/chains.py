"""A chain of new messages (append_all, the batch endpoint) in a fixed number of
statements: the parent and any given ids looked up at once, the rows stored by
bulk.insert. A chain replaying stored ids (a retried batch) goes message by message
instead (messages.Messages.append_chain), which decides each as an append does."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memory_core.messages import Message, NewMessage, now

from . import bulk, sql
from .paths import find, leaf, raise_missing_parent
from .vendors.chosen import current


def append(
    cur: Any, session_id: str, news: Sequence[NewMessage], *, parent_id: str | None,
    root: bool,
) -> list[Message] | None:
    """Store the chain under parent_id (else the latest leaf; root: as a new root), each
    message the parent of the next; None, writing nothing, when one of its given ids is
    stored already or given twice. Raises NotFound/Conflict for a missing parent."""
    if not news:
        return []
    given = [n.id for n in news if n.id_given]
    if len(set(given)) != len(given):
        return None
    wanted = given + ([parent_id] if parent_id is not None else [])
    found = find(cur, session_id, wanted) if wanted else {}
    if any(i in found for i in given):
        return None
    parent: tuple[int, str] | None
    if parent_id is not None:
        if parent_id not in found:
            raise_missing_parent(cur, session_id, parent_id)
        parent = (found[parent_id][0], parent_id)
    else:
        parent = None if root else leaf(cur, session_id)
    d = current()
    stored_above = (bulk.ancestor_parts(cur, parent[0])
                    if parent is not None and any(n.tool_result_ids() for n in news) else [])
    parts_by_id = {n.id: n.parts for n in news}
    messages: list[Message] = []
    rows: list[bulk.BulkRow] = []
    parent_by_id: dict[str, str | None] = {}
    above = parent[1] if parent is not None else None
    for new in news:
        tokens, extra = bulk.tokens_of(new.text, new.parts, above, parts_by_id, parent_by_id,
                                       stored_above)
        rows.append(bulk.BulkRow(new.id, above, new.role, new.parts_json, new.metadata_json,
                                 d.message_time(new.created_at), tokens, extra))
        messages.append(new.to_message(above))
        parent_by_id[new.id] = above
        above = new.id
    # A second child of an explicit parent, or a second root: the session branches.
    if parent_id is not None:
        cur.execute(sql.MARK_BRANCH_UNDER, [session_id, parent[0]])  # type: ignore[index]
    elif root:
        cur.execute(sql.MARK_BRANCH_ROOT, [session_id, session_id])
    bulk.insert(cur, d.vendor, session_id, rows, {parent[1]: parent[0]} if parent else {},
                stamp=d.db_datetime(now()), branched=False)
    return messages
