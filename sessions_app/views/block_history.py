"""A block's History in the prompt panel (memory_core/versions.py): its versions with
who wrote each, when and from which message (a link opening it on its branch), the diff
against the version before, and Restore.

The list is a fragment loaded when the History disclosure opens; Restore answers the
whole panel, as every other panel write does (inspector._done)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_POST, require_safe

from memory_core import InvalidInput, NotFound
from memory_core.versions import BlockVersion

from .common import session_or_404
from .inspector import _done, _panel, diff_lines

HISTORY = "arbor/_prompt_history.html"
SHOWN = 20  # versions per page of the History


def _row(session: Any, label: str, version: BlockVersion,
         older: BlockVersion | None) -> dict[str, Any]:
    before = older.text if older is not None and older.number == version.number - 1 else None
    if before is None and version.number > 1:
        try:
            before = session.block_version(label, version.number - 1).text
        except NotFound:  # pruned
            before = ""
    lines = [(kind, line) for kind, line in diff_lines(before or "", version.text)
             if kind != "file"]
    return {"v": version, "lines": lines}


@require_safe
@login_required
def history(request: HttpRequest, session_id: str, label: str) -> HttpResponse:
    session = session_or_404(request, session_id)
    before = request.GET.get("before", "")
    try:
        page = session.block_versions(label, limit=SHOWN + 1,
                                      before=int(before) if before.isdigit() else None)
    except NotFound as exc:
        return render(request, HISTORY, {"missing": exc.detail}, status=404)
    items = page.items
    rows = [_row(session, label, v, items[i + 1] if i + 1 < len(items) else None)
            for i, v in enumerate(items[:SHOWN])]
    return render(request, HISTORY, {
        "session_id": session.id, "label": label, "rows": rows,
        "writable": session.get_context_block(label).writable,
        "older": items[SHOWN - 1].number if len(items) > SHOWN else None,
        # The newest version is the block's value: restoring it would change nothing.
        "newest": items[0].number if items and not before.isdigit() else None,
        "leaf_id": (request.GET.get("leaf") or "").strip(),
    })


@require_POST
@login_required
def restore(request: HttpRequest, session_id: str, label: str, number: int) -> HttpResponse:
    """Write the version back as the newest; a refusal shows in the panel, nothing changed."""
    session = session_or_404(request, session_id)
    try:
        session.restore_block(label, number)
    except NotFound as exc:
        return _panel(request, session, status=404, notice=exc.detail)
    except InvalidInput as exc:  # over budget, read-only
        return _panel(request, session, status=422,
                      notice=f"Version {number} of {label} was not restored: {exc.detail}")
    return _done(request, session)
