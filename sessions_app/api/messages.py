"""Messages: appends (with branches and if_latest), batches, edits, deletes, and reads of
paths, branches, the latest leaf and the whole tree."""

from __future__ import annotations

from typing import Any

import orjson
from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status

from memory_core import Message, NotFound

from ..access import session_for
from ..storage.paths import message_dicts
from .message_schemas import AppendIn, BatchIn, UpdateIn
from .render import dumps, json_response
from .schemas import (
    HistoryOut,
    LeafOut,
    MessageList,
    MessageOut,
    PathsOut,
    TreeOut,
    errors,
)
from .schemas import Id as IdText

router = Router(tags=["messages"])
S = "/sessions/{aid:session_id}"
M = S + "/messages/{aid:message_id}"
DEFAULT_PAGE = 50  # history messages per page when only before_id is given


def _leaf_of(history: list[Message]) -> str | None:
    """The stored leaf a path ends at; a summary overlay at the end names it."""
    if not history:
        return None
    last = history[-1]
    metadata = last.metadata if isinstance(last.metadata, dict) else {}  # encoded: stored
    overlay = metadata.get("compaction") if last.id.startswith("compaction-") else None
    return str(overlay["to_message_id"]) if isinstance(overlay, dict) else last.id


@router.post(S + "/messages", response={201: MessageOut, **errors(404, 409, 413, 422)})
def append_message(request: HttpRequest, session_id: str, body: AppendIn) -> Any:
    """Append under parent_id, else under the latest leaf (root: as a new root). The same
    id with the same content is idempotent; with other content, 409."""
    session = session_for(request.auth, session_id)
    message = session.append_message(body.message, at=body.at)
    return json_response(message.to_dict(), status=201)  # the engine's shape: no second check


@router.post(S + "/messages/batch", response={201: MessageList, **errors(404, 409, 413, 422)})
def append_batch(request: HttpRequest, session_id: str, body: BatchIn) -> Any:
    """Append messages in order, each the parent of the next; all or nothing. The first
    goes under parent_id, else the latest leaf (root: as a new root)."""
    session = session_for(request.auth, session_id)
    stored = session.append_messages(body.messages, at=body.at)
    return json_response({"items": message_dicts(stored)}, status=201)


@router.delete(S + "/messages", response={204: None, **errors(404)})
def clear_messages(request: HttpRequest, session_id: str) -> Any:
    """Remove every message, overlay and search row of the session."""
    session_for(request.auth, session_id).clear_messages()
    return Status(204, None)


@router.get(M, response={200: MessageOut, **errors(404)})
def get_message(request: HttpRequest, session_id: str, message_id: str) -> Any:
    message = session_for(request.auth, session_id).get_message(message_id)
    if message is None:
        raise NotFound(f"message {message_id} not found in session {session_id}")
    return message


@router.put(M, response={200: MessageOut, **errors(404, 413, 422)})
def update_message(request: HttpRequest, session_id: str, message_id: str, body: UpdateIn) -> Any:
    """Replace a message's content in place; its parent and children stay."""
    if body.message.id is not None and body.message.id != message_id:
        return Status(422, {"detail": "message.id differs from the id in the URL",
                            "code": "invalid"})
    session = session_for(request.auth, session_id)
    return session.update_message(body.message.with_id(message_id))


@router.delete(M, response={204: None, **errors(404)})
def delete_message(request: HttpRequest, session_id: str, message_id: str) -> Any:
    """Delete one message; its children move up to its parent."""
    if not session_for(request.auth, session_id).delete_messages([message_id]):
        raise NotFound(f"message {message_id} not found in session {session_id}")
    return Status(204, None)


@router.get(M + "/branches", response={200: MessageList, **errors(404)})
def get_branches(request: HttpRequest, session_id: str, message_id: str) -> Any:
    """The message's children, oldest first."""
    return {"items": session_for(request.auth, session_id).get_branches(message_id)}


@router.get(S + "/history", response={200: HistoryOut, **errors(404, 422)})
def get_history(
    request: HttpRequest, session_id: str, leaf_id: IdText | None = None, raw: bool = False,
    limit: int | None = None, before_id: IdText | None = None,
) -> Any:
    """The path from the root to leaf_id (default: the latest leaf), oldest first, with
    compaction overlays applied unless raw. With `limit` (1-500) or `before_id`, one page
    of it: the last `limit` messages (default 50), or the `limit` just before before_id
    (a message on that path: 422 when it is not, 404 when unknown), with `has_more`,
    `next_before_id` (pass it as before_id for the page above) and `siblings` (each
    stored message's place among its branches). Without either, the whole path."""
    session = session_for(request.auth, session_id)
    if limit is not None or before_id is not None:
        got = session.get_history_page(leaf_id, limit=DEFAULT_PAGE if limit is None else limit,
                                       before_id=before_id, raw=raw)
        first = got.messages[0].id if got.has_more and got.messages else None
        return json_response({**got.to_dict(), "next_before_id": first})
    history = session.get_history(leaf_id, raw, encoded=True)
    # A path kept by the path cache comes with its JSON; others are encoded here.
    encoded = getattr(history, "json", None) or dumps(message_dicts(history))
    return json_response({"leaf_id": leaf_id or _leaf_of(history),
                          "messages": orjson.Fragment(encoded)})


@router.get(S + "/leaf", response={200: LeafOut, **errors(404)})
def get_leaf(request: HttpRequest, session_id: str) -> Any:
    """The latest leaf (null in an empty session): the parent of the next append."""
    return {"message": session_for(request.auth, session_id).get_latest_leaf()}


@router.get(S + "/tree", response={200: TreeOut, **errors(404)})
def get_tree(request: HttpRequest, session_id: str) -> Any:
    """Every message as {id, parent_id, role, preview, created_at, child_count}."""
    rows = session_for(request.auth, session_id).get_tree()
    return json_response({"items": [r.to_dict() for r in rows]})


@router.get(S + "/paths", response={200: PathsOut, **errors(404)})
def get_paths(request: HttpRequest, session_id: str) -> Any:
    """Every branch at once: the tree's rows, and each leaf (oldest first, the last is the
    latest leaf) with its path as `history` reads it. One request instead of one per leaf;
    its size is the sum of the paths' lengths."""
    session = session_for(request.auth, session_id)
    rows = session.get_tree()
    paths = session.get_leaf_paths()
    return json_response({"tree": [r.to_dict() for r in rows],
                          "items": [{"leaf_id": leaf, "messages": message_dicts(path)}
                                    for leaf, path in paths]})
