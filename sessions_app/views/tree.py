"""`/sessions/<id>/tree/` and `/sessions/<id>/usage/`: a session seen whole.

The tree page reads the session once (`get_tree()`, one query) and shows it as an outline
in which a linear stretch of messages is one flat list and only branch points nest, so a
5,000-message conversation is 5,000 light rows, not 5,000 nested boxes. The branch on
screen (`?leaf=`, else the latest leaf) is expanded and highlighted; every other branch
is a closed `<details>` whose rows are fetched (htmx, `?under=<id>`) when it is opened.
Rows use `content-visibility: auto`, so the browser lays out only what is on screen.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_safe

from memory_core import NotFound, Session
from memory_core.tree import TreeRow, depth_order

from ..storage.branches import sibling_positions
from .branch_map import branch_map
from .chat import resolve_leaf
from .common import session_or_404, session_row_or_404

ROLE_LABELS = {"user": "You", "assistant": "Assistant", "tool": "Tool", "system": "System"}
DEEP = 8  # branch levels indented; deeper ones stop moving right (375 px screens)


def _leaf_or_none(request: HttpRequest, session: Session) -> tuple[str | None, bool]:
    """(the branch's leaf, whether `?leaf=` named a message that exists)."""
    try:
        return resolve_leaf(request, session, request.GET.get("leaf") or None), True
    except NotFound:
        return None, False


class Outline:
    """The tree as HTML; rows and branch summaries are escaped by format_html."""

    def __init__(self, rows: list[TreeRow], *, session_id: str, leaf_id: str | None) -> None:
        self.session_id = session_id
        self.leaf_id = leaf_id
        self.by_id = {r.id: r for r in rows}
        self.places = sibling_positions(rows)
        self.children: dict[str | None, list[TreeRow]] = {}
        for r in rows:
            self.children.setdefault(r.parent_id, []).append(r)
        self.sizes: dict[str, int] = {}
        for row, _ in reversed(depth_order(rows)):  # children before their parents
            self.sizes[row.id] = 1 + sum(self.sizes[c.id] for c in self.children.get(row.id, ()))
        self.path: set[str] = set()
        current = leaf_id
        while current is not None and current in self.by_id and current not in self.path:
            self.path.add(current)
            current = self.by_id[current].parent_id
        self.chat_url = reverse("chat", args=[session_id])
        self.tree_url = reverse("session-tree", args=[session_id])

    def html(self, *, under: str | None = None, level: int = 0) -> SafeString:
        start = [self.by_id[under]] if under is not None else self.children.get(None, [])
        if not start:
            return mark_safe("")
        out: list[str] = []
        # An explicit stack, not recursion: a tree may be thousands of levels deep.
        stack: list[tuple[str, Any, int]] = [
            ("run", start[0], level) if len(start) == 1 else ("group", start, level)]
        while stack:
            kind, item, lvl = stack.pop()
            if kind == "html":
                out.append(item)
            elif kind == "run":
                stack.extend(reversed(self._run(item, lvl)))
            else:
                stack.extend(reversed(self._group(item, lvl)))
        return mark_safe("".join(out))

    def _run(self, node: TreeRow, level: int) -> list[tuple[str, Any, int]]:
        """A linear stretch: the node, then its only child, and so on, to a fork or a leaf."""
        rows: list[str] = ['<ol class="run">']
        while True:
            rows.append(self._row(node))
            kids = self.children.get(node.id, [])
            if len(kids) != 1:
                break
            node = kids[0]
        tasks: list[tuple[str, Any, int]] = [("html", "".join(rows), level)]
        if kids:
            tasks += [("html", '<li class="fork">', level), ("group", kids, level + 1),
                      ("html", "</li>", level)]
        tasks.append(("html", "</ol>", level))
        return tasks

    def _group(self, siblings: list[TreeRow], level: int) -> list[tuple[str, Any, int]]:
        deep = " deep" if level > DEEP else ""
        tasks: list[tuple[str, Any, int]] = [("html", f'<ul class="branches{deep}">', level)]
        for child in siblings:
            place = self.places[child.id]
            is_open = child.id in self.path
            size = self.sizes.get(child.id, 1)
            summary = format_html(
                '<li><details class="branch{}"{}><summary><span class="branch-n">Branch {}/{}'
                '</span> <span class="muted small">· {} message{}{} ·</span> '
                '<span class="branch-first">{}: {}</span></summary>',
                " on-path" if is_open else "", " open" if is_open else "", place.index, place.count,
                size, "" if size == 1 else "s", " · current" if is_open else "",
                ROLE_LABELS.get(child.role, child.role), child.preview or "(no text)")
            tasks.append(("html", summary, level))
            if is_open:
                tasks.append(("run", child, level))
            else:
                query = urlencode({"under": child.id, "level": level,
                                   **({"leaf": self.leaf_id} if self.leaf_id else {})})
                tasks.append(("html", format_html(
                    '<div class="lazy" hx-get="{}?{}" hx-trigger="toggle once from:closest '
                    'details" hx-swap="outerHTML">Loading… <a href="{}?{}">open this branch in '
                    'the chat</a></div>', self.tree_url, query, self.chat_url,
                    urlencode({"leaf": child.id})), level))
            tasks.append(("html", "</details></li>", level))
        tasks.append(("html", "</ul>", level))
        return tasks

    def _row(self, r: TreeRow) -> SafeString:
        classes = f"node role-{r.role}" + (" on-path" if r.id in self.path else "")
        current = ' aria-current="true"' if r.id == self.leaf_id else ""
        fork = ""
        if r.child_count > 1:
            fork = format_html(' <span class="badge fork-count">{} branches</span>',
                               r.child_count)
        return format_html(
            '<li class="{}" id="t-{}" data-message-id="{}"><a href="{}?{}#m-{}"{}>'
            '<span class="role">{}</span> <span class="preview">{}</span></a>{}</li>',
            classes, r.id, r.id, self.chat_url, urlencode({"leaf": r.id}), r.id,
            mark_safe(current), ROLE_LABELS.get(r.role, r.role), r.preview or "(no text)",
            mark_safe(fork))


@require_safe
@login_required
def tree(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    leaf_id, known = _leaf_or_none(request, session)
    rows = session.get_tree()
    outline = Outline(rows, session_id=session.id, leaf_id=leaf_id)
    under = request.GET.get("under")
    if under is not None:  # a closed branch being opened: just its rows
        if under not in outline.by_id:
            return HttpResponse("That message is gone; reload the page.", status=404)
        try:
            level = max(0, min(int(request.GET.get("level", "0")), 10_000))
        except ValueError:
            level = 0
        return HttpResponse(outline.html(under=under, level=level))
    row = session_row_or_404(request, session_id)
    forks = sum(1 for r in rows if r.child_count > 1)
    context = {"row": row, "outline": outline.html(), "count": len(rows), "forks": forks,
               "map": branch_map(rows, leaf_id, session.get_compactions()),
               "leaf_id": leaf_id, "unknown_leaf": not known,
               "leaves": sum(1 for r in rows if r.child_count == 0)}
    return render(request, "arbor/tree.html", context, status=200 if known else 404)


def usage_of(messages: list[Any]) -> dict[str, Any]:
    """Per-message usage on a path (assistant messages' `metadata.usage`, one per model
    call) and their total: the branch's cost. `turn_usage` sums a whole turn, so adding it
    too would count each call twice."""
    items, total = [], {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    for m in messages:
        used = m.metadata.get("usage") if isinstance(m.metadata, dict) else None
        if not isinstance(used, dict):
            continue
        clean = {k: _number(used.get(k)) for k in total}
        for k in total:
            total[k] += clean[k]
        turn = m.metadata.get("turn_usage")
        items.append({"m": m, "usage": clean, "model": str(used.get("model") or ""),
                      "turn": turn if isinstance(turn, dict) else None})
    return {"items": items, "total": total}


def _number(value: Any) -> Any:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else 0


@require_safe
@login_required
def usage(request: HttpRequest, session_id: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    row = session_row_or_404(request, session_id)
    leaf_id, known = _leaf_or_none(request, session)
    path = session.get_history(leaf_id, raw=True) if leaf_id else []
    context = {"row": row, "leaf_id": leaf_id, "unknown_leaf": not known,
               "leaf": path[-1] if path else None, "path_length": len(path), **usage_of(path)}
    return render(request, "arbor/usage.html", context, status=200 if known else 404)
