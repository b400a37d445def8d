"""A page of history as read (Session.get_history_page): a window of exactly what
get_history returns, the last `limit` messages of the path or the `limit` before one.

Where no compaction overlay or unloaded skill changes the path as read (most sessions),
the page is the stored path's page (storage.path_page): its cost does not grow with the
path. Where one does, a summary stands for a range of stored messages, so positions on
the path as read are known only from the whole path: it is read (as get_history reads
it, a fixed number of queries), and the window cut from it. Either way the query count
is fixed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import InvalidInput, NotFound
from .messages import Message
from .tree import PathPage, SiblingInfo, apply_overlays, hide_unloaded_skills

if TYPE_CHECKING:
    from .storage import SessionStorage


def history_page(storage: SessionStorage, session_id: str, leaf_id: str | None, *,
                 limit: int, before_id: str | None, raw: bool) -> PathPage:
    """Raises NotFound (leaf_id, before_id), InvalidInput (before_id not on the path)."""
    if raw or not any(storage.views(session_id)):
        return storage.path_page(session_id, leaf_id, limit=limit, before_id=before_id,
                                 on_path=True)
    path, overlays, unloaded = storage.path(session_id, leaf_id, with_overlays=True)
    shown = apply_overlays(hide_unloaded_skills(path, unloaded), overlays)
    end = len(shown) if before_id is None else _position(
        storage, session_id, path, shown, before_id, leaf_id)
    start = max(0, end - limit)
    page = shown[start:end]
    return PathPage(messages=page, has_more=start > 0,
                    leaf_id=leaf_id or (path[-1].id if path else None),
                    siblings=_siblings(storage, session_id, path, page))


def _summary_range(message: Message) -> tuple[str, str] | None:
    overlay = message.metadata.get("compaction") if message.id.startswith(
        "compaction-") else None
    if not isinstance(overlay, dict):
        return None
    return str(overlay["from_message_id"]), str(overlay["to_message_id"])


def _position(storage: SessionStorage, session_id: str, path: list[Message],
              shown: list[Message], before_id: str, leaf_id: str | None) -> int:
    """Where before_id stands on the path as read: a stored message a summary hides
    stands where that summary does."""
    index = {m.id: i for i, m in enumerate(shown)}
    if before_id in index:
        return index[before_id]
    stored = {m.id: i for i, m in enumerate(path)}
    if before_id in stored:
        for i, message in enumerate(shown):
            covered = _summary_range(message)
            if covered and stored[covered[0]] <= stored[before_id] <= stored[covered[1]]:
                return i
    if storage.get_message(session_id, before_id) is None:
        raise NotFound(f"message {before_id} not found in session {session_id}")
    raise InvalidInput(f"before_id {before_id} is not on the path to "
                       f"{leaf_id or 'the latest leaf'}", field="before_id")


def _siblings(storage: SessionStorage, session_id: str, path: list[Message],
              page: list[Message]) -> dict[str, SiblingInfo]:
    """Each stored message's place among its siblings (a summary has none): one path
    page from the page's last stored message up to its first."""
    stored = [m for m in page if _summary_range(m) is None]
    if not stored:
        return {}
    position = {m.id: i for i, m in enumerate(path)}
    span = position[stored[-1].id] - position[stored[0].id] + 1
    found = storage.path_page(session_id, stored[-1].id, limit=span, before_id=None).siblings
    return {m.id: found[m.id] for m in stored if m.id in found}
