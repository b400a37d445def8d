"""Read-only HTML of the engine's state for change pages: tree, overlays, blocks, prompt, children."""

from __future__ import annotations

import json
from typing import Any

import orjson
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from memory_core import ArborError, SessionManager
from memory_core import Session as EngineSession
from memory_core.messages import project_text
from memory_core.tree import SiblingInfo, TreeRow, depth_order, preview

from .. import models
from ..storage.branches import sibling_positions
from .lists import (
    _count,
)

MAX_TREE_ROWS = 500  # the change page stays usable for long sessions
MAX_INDENT = 40  # deeper levels keep this indent; the depth column still tells
MAX_CHILDREN = 100  # a message page lists this many children; the rest are one link away
MAX_BLOCK_CHARS = 2000  # of a block's content on the session page


def _engine(row: models.Session) -> EngineSession:
    return SessionManager.for_agent(row.agent_id).get_session(row.id)



# ------------------------------------------------------------------ tree display
def _tree_row(row: TreeRow, depth: int, *, branch: SiblingInfo | None, leaf: bool,
              href: str) -> SafeString:
    markers = []
    if branch and branch.count > 1:
        markers.append(format_html('<span class="arbor-branch">[branch {} of {}]</span>',
                                   branch.index, branch.count))
    if leaf:
        markers.append(format_html('<span class="arbor-leaf">[{}]</span>', "latest leaf"))
    children: str | SafeString = _count(row.child_count, "child", "children")
    if row.child_count > 1:
        children = format_html("<strong>{} children</strong>", row.child_count)
    return format_html(
        '<tr><td style="padding-left:{}px">{}<a href="{}">{}</a> <strong>{}</strong> {}</td>'
        '<td>{}</td><td>{}</td><td>{}</td><td style="white-space:nowrap">{}</td></tr>',
        8 + 16 * min(depth, MAX_INDENT), "↳ " if depth else "", href, row.id, row.role,
        format_html_join(" ", "{}", ((m,) for m in markers)), depth, row.preview, children,
        row.created_at.strftime("%Y-%m-%d %H:%M:%S"),
    )


def tree_html(session: EngineSession) -> SafeString:
    """The session's messages depth-first, indented by depth, with branch markers."""
    rows = session.get_tree()
    if not rows:
        return format_html("<p>{}</p>", "No messages.")
    leaf = session.get_latest_leaf()
    branches = sibling_positions(rows)
    ordered = depth_order(rows)
    changelist = reverse("admin:sessions_app_message_changelist")

    def href(message_id: str) -> str:
        query = {"session__id__exact": session.id, "message_id__exact": message_id}
        return f"{changelist}?{urlencode(query)}"

    body = format_html_join("", "{}", (
        (_tree_row(r, d, branch=branches.get(r.id), leaf=leaf is not None and r.id == leaf.id,
                   href=href(r.id)),)
        for r, d in ordered[:MAX_TREE_ROWS]
    ))
    head = format_html(
        "<p>{}, {}, {}; depth-first, branches oldest first.</p>",
        _count(len(rows), "message", "messages"),
        _count(sum(r.child_count == 0 for r in rows), "leaf", "leaves"),
        _count(sum(r.child_count > 1 for r in rows), "branch point", "branch points"),
    )
    more = ""
    if len(ordered) > MAX_TREE_ROWS:
        more = format_html("<p>Showing the first {} of {} messages.</p>", MAX_TREE_ROWS, len(rows))
    return format_html(
        '{}<table class="arbor-tree"><thead><tr><th>message</th><th>depth</th><th>text</th>'
        "<th>children</th><th>created</th></tr></thead><tbody>{}</tbody></table>{}",
        head, body, more,
    )


def compactions_html(session: EngineSession) -> SafeString:
    overlays = session.get_compactions()
    if not overlays:
        return format_html("<p>{}</p>", "None.")
    return format_html("<ul>{}</ul>", format_html_join("", "<li>{} → {}: {}</li>", (
        (o.from_message_id, o.to_message_id, preview(o.summary)) for o in overlays
    )))


def _kind(block: Any) -> str:
    if block.is_skill:
        return "skill"
    if block.is_searchable:
        return "search"
    return "writable" if block.writable else "readonly"


def _block_content(text: str) -> SafeString:
    cut = text[:MAX_BLOCK_CHARS] + ("…" if len(text) > MAX_BLOCK_CHARS else "")
    return format_html("<details><summary>{}</summary><pre>{}</pre></details>",
                       preview(text) or "(empty)", cut)


def _block_spec(spec: dict[str, Any] | None) -> SafeString | str:
    if spec is None:
        return "declared in code or by the agent"
    return format_html("<details><summary>{}</summary><pre>{}</pre></details>",
                       f"scope {spec.get('scope') or 'session'}",
                       json.dumps(spec, indent=2, ensure_ascii=False))


def blocks_html(session: EngineSession) -> SafeString:
    """The session's blocks as the agent sees them (agent-scope and code-declared ones
    too), each with its stored spec (SessionBlock); removed blocks are listed after.
    Read-only: blocks change through the engine, which checks budgets and kinds."""
    stored = {b.label: b for b in models.SessionBlock.objects.filter(session_id=session.id)}
    try:
        blocks = session.get_context_blocks()
    except ArborError as exc:  # e.g. a files= block whose storage is gone
        return format_html("<p>Cannot read the blocks: {}</p>", exc.detail)
    rows = [(b.label, _kind(b), b.tokens, b.max_tokens or "none", b.description or "",
             _block_content(b.content),
             _block_spec(stored[b.label].spec if b.label in stored else None))
            for b in blocks]
    shown = {b.label for b in blocks}
    rows += [(b.label, "removed", "", b.spec.get("max_tokens") or "none",
              b.spec.get("description") or "", "", _block_spec(b.spec))
             for b in stored.values() if b.label not in shown]
    if not rows:
        return format_html("<p>{}</p>", "No blocks.")
    return format_html(
        '<table class="arbor-blocks"><thead><tr><th>label</th><th>kind</th><th>tokens</th>'
        "<th>budget</th><th>description</th><th>content</th><th>spec</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
                         "<td>{}</td><td>{}</td></tr>", rows),
    )


def prompt_html(session: EngineSession) -> SafeString:
    try:
        status = session.system_prompt_status()
    except ArborError as exc:
        return format_html("<p>{}</p>", exc.detail)
    if not status.frozen:
        return format_html("<p>{}</p>", "Not frozen yet (the next turn freezes it).")
    changed = ", ".join(status.changed_blocks) or "none"
    return format_html("<p>Frozen at {}; {}. Changed blocks: {}.</p>",
                       status.frozen_at.isoformat() if status.frozen_at else "?",
                       "up to date" if status.up_to_date else "stale: Refresh prompt shows the"
                       " current blocks", changed)


def children_html(message: models.Message) -> SafeString:
    """Links to a message's children, oldest first; more than MAX_CHILDREN link on."""
    rows = list(models.Message.objects.filter(parent_seq=message.seq).order_by("seq")
                .values_list("seq", "message_id", "role", "parts")[:MAX_CHILDREN + 1])
    if not rows:
        return format_html("<p>{}</p>", "None (a leaf).")
    items = format_html_join("", '<li><a href="{}">{}</a> <strong>{}</strong> {}</li>', (
        (reverse("admin:sessions_app_message_change", args=[seq]), mid, role,
         preview(project_text(orjson.loads(parts))))
        for seq, mid, role, parts in rows[:MAX_CHILDREN]))
    if len(rows) <= MAX_CHILDREN:
        return format_html("<p>{}</p><ul>{}</ul>", _count(len(rows), "child", "children"), items)
    total = models.Message.objects.filter(parent_seq=message.seq).count()
    url = reverse("admin:sessions_app_message_changelist")
    return format_html('<p>The first {} of {} children.</p><ul>{}</ul><p><a href="{}?{}">{}</a></p>',
                       MAX_CHILDREN, total, items, url, urlencode({"parent_seq": message.seq}),
                       "All children")
