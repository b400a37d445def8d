"""A message event as a browser tab shows it, rendered once per event and worker.

A tab that gets `message.appended` or `message.updated` needs the message as the page
renders it (`arbor/_message.html`: sanitised Markdown, its place among its branches). It
used to fetch that fragment itself: one request and ~5 queries per tab per event. Now the
worker's hub (fanout.py) renders it once, when at least one of its sockets for that
session is a browser tab, and sends it to those tabs as the frame's `html` (beside `data`,
which stays as it is). Agents' sockets get the frame unchanged. A frame replayed from the
outbox carries no `html`: the tab fetches the fragment, as it always could.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from django.template.loader import render_to_string

from memory_core import Message, SessionManager

log = logging.getLogger(__name__)

RENDERED = frozenset({"message.appended", "message.updated"})


def _message(data: Any) -> Message | None:
    """The frame's message (Message.to_dict()'s shape), or None when it is not one."""
    m = data.get("message") if isinstance(data, dict) else None
    if not isinstance(m, dict):
        return None
    try:
        return Message(str(m["id"]), m["parent_id"], str(m["role"]), list(m["parts"]),
                       dict(m["metadata"]), datetime.fromisoformat(m["created_at"]))
    except (KeyError, TypeError, ValueError):
        return None


def message_html(frame: dict[str, Any], agent_id: str) -> str | None:
    """The fragment a tab would GET for the frame's message (one query: its siblings), or
    None when the frame holds no message to render, or one still streaming."""
    from ..views.chat import message_context  # (the page's own: one rule for both)

    if frame.get("type") not in RENDERED:
        return None
    message = _message(frame.get("data"))
    if message is None or message.metadata.get("streaming"):
        return None  # (a streaming answer's partial writes, 4 a second: tabs show the deltas)
    session = SessionManager.for_agent(agent_id).bind(str(frame["session_id"]))
    return render_to_string("arbor/_message.html", message_context(session, message))
