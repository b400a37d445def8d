"""The prompt panel beside the chat (SPEC §4, §11, §16): what the model is sent.

The frozen system prompt exactly as sent (the bytes `GET /api/v1/sessions/{id}/system-prompt`
returns), each context block with its usage, inline edits of writable blocks (the engine
enforces the budget; a refused write changes nothing), loaded skills with Unload, a token
gauge for the branch on screen, and the staleness notice whose refresh shows the diff first.

Every view answers the whole panel fragment (`_prompt_panel.html`), so htmx swaps it in one
piece and the page re-fetches it on `context.updated` / `prompt.refreshed` events. Viewing
never freezes the prompt: before the first turn the panel shows what would be frozen.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe
from django.views.decorators.http import require_POST, require_safe

from memory_core import InvalidInput, NotFound, Session
from memory_core.compaction import truncate_older_messages
from memory_core.context import ContextBlock
from memory_core.prompt import SEPARATOR, percent
from memory_core.tokens import MESSAGE_OVERHEAD, estimate_tokens

from ..engine_config import llm_from_settings
from ..semantic.status import status as embedder_status
from .common import session_or_404

PANEL = "arbor/_prompt_panel.html"
DIFF = "arbor/_prompt_diff.html"
WARN, DANGER = 75, 90  # usage bar: amber from 75 %, red from 90 %
MAX_LISTED = 200  # entries listed per search block


def level(pct: int) -> str:
    return "danger" if pct >= DANGER else "warn" if pct >= WARN else "ok"


@dataclass
class BlockView:
    """One block as the panel shows it."""

    block: ContextBlock
    kind: str
    percent: int | None = None
    level: str = "ok"
    entries: list[tuple[str, str]] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)
    error: str | None = None
    draft: str | None = None  # the refused text, kept in the editor


def pre_html(text: str) -> SafeString:
    """Text for a <pre> that reads back byte for byte: escaped, CR kept as a character
    reference (the HTML parser turns a literal CR into LF), and a newline first because
    the parser drops one newline right after <pre>."""
    lines = str(escape(text)).replace("\r", "&#13;").split("\n")
    return mark_safe("\n" + "\n".join(  # noqa: S308
        f'<span class="pp-rule">{line}</span>' if is_rule(line) else line for line in lines))


def is_rule(line: str) -> bool:
    """A line of the prompt's block separators (═ x 46, prompt.py): the panel keeps it on
    one line, clipped where the panel is narrower, instead of wrapping its last few
    characters onto a line of their own (its text stays as sent)."""
    return len(line) >= 8 and not line.strip(SEPARATOR[0])


def _entries(block: Any, kind: str, content: str) -> list[tuple[str, str]]:
    """(key, description) of a skill or search block's entries, when they can be listed."""
    if kind == "skill":
        rows = []
        for line in content.splitlines():
            if line.startswith("- "):
                key, _, description = line[2:].partition(": ")
                rows.append((key, description))
        return rows
    store, namespace = getattr(block.provider, "store", None), getattr(block.provider,
                                                                       "namespace", None)
    if kind == "search" and store is not None and namespace is not None:
        return list(store.list_entries(namespace))[:MAX_LISTED]
    return []


def block_views(session: Session, *, errors: dict[str, tuple[str, str]] | None = None
                ) -> list[BlockView]:
    kinds = {b.label: b for b in session.context.blocks()}
    loaded: dict[str, list[str]] = {}
    for skill in session.get_loaded_skills():
        loaded.setdefault(skill["label"], []).append(skill["key"])
    views = []
    for cb in session.get_context_blocks():
        block = kinds.get(cb.label)
        kind = block.kind if block is not None else ("writable" if cb.writable else "readonly")
        view = BlockView(cb, kind, loaded=loaded.get(cb.label, []))
        if cb.max_tokens:
            view.percent = percent(cb.tokens, cb.max_tokens)
            view.level = level(view.percent)
        if block is not None:
            view.entries = _entries(block, kind, cb.content)
        if errors and cb.label in errors:
            view.error, view.draft = errors[cb.label]
        views.append(view)
    return views


def would_be_prompt(session: Session) -> str:
    """The prompt a refresh would freeze now."""
    return session.preview_system_prompt()


def context_window(session: Session) -> int | None:
    """The model's context size: ARBOR_CONTEXT_WINDOW, else the client's attribute."""
    configured = getattr(settings, "ARBOR_CONTEXT_WINDOW", None)
    if configured:
        return int(configured)
    llm = session.config.llm or llm_from_settings()
    size = getattr(llm, "context_window", None)
    return int(size) if isinstance(size, int) and size > 0 else None


def gauge(session: Session, *, leaf_id: str | None, prompt: str) -> dict[str, Any]:
    """Tokens the branch on screen costs a model call: prompt, tools, history, summaries
    (history as the turn sends it: overlays applied, old tool outputs shortened)."""
    count = session.config.token_counter or estimate_tokens
    tools = session.tools("openai")
    try:
        history = session.get_history(leaf_id) if leaf_id else []
    except NotFound:
        history = []
    if session.config.micro_compaction:
        history = truncate_older_messages(history)
    summaries = sum(count(m.text) + MESSAGE_OVERHEAD for m in history
                    if m.metadata.get("compaction"))
    messages = sum(count(m.text) + MESSAGE_OVERHEAD for m in history
                   if not m.metadata.get("compaction"))
    parts = [("System prompt", count(prompt)),
             ("Tool schemas", count(json.dumps(tools, ensure_ascii=False)) if tools else 0),
             ("History", messages), ("Summaries", summaries)]
    total = sum(n for _, n in parts)
    window = context_window(session)
    pct = percent(total, window) if window else None
    return {"parts": parts, "total": total, "window": window, "percent": pct,
            "level": level(pct) if pct is not None else "ok", "width": min(pct or 0, 100)}


def panel_context(session: Session, *, leaf_id: str | None,
                  errors: dict[str, tuple[str, str]] | None = None,
                  notice: str | None = None) -> dict[str, Any]:
    status = session.system_prompt_status()
    frozen_at: datetime | None = None
    if status.frozen:
        prompt, frozen_at = session.context.frozen_prompt()
    else:
        prompt = would_be_prompt(session)
    stale = status.frozen and not status.up_to_date
    count = session.config.token_counter or estimate_tokens
    return {
        "session_id": session.id, "leaf_id": leaf_id or "", "status": status,
        "prompt": prompt, "prompt_html": pre_html(prompt), "prompt_tokens": count(prompt),
        "frozen_at": frozen_at, "stale": stale,
        "changes": (len(status.changed_blocks) or 1) if stale else 0,
        "changed": status.changed_blocks, "blocks": block_views(session, errors=errors),
        "gauge": gauge(session, leaf_id=leaf_id, prompt=prompt), "notice": notice,
        "embedder": embedder_status(session.agent_id),
    }


def _leaf(request: HttpRequest) -> str | None:
    return (request.POST.get("leaf") or request.GET.get("leaf") or "").strip() or None


def _panel(request: HttpRequest, session: Session, *, status: int = 200,
           **options: Any) -> HttpResponse:
    return render(request, PANEL, panel_context(session, leaf_id=_leaf(request), **options),
                  status=status)


def _done(request: HttpRequest, session: Session, **options: Any) -> HttpResponse:
    """After a write: the fresh panel for htmx; without JavaScript, back to the chat."""
    if request.headers.get("HX-Request"):
        return _panel(request, session, **options)
    leaf = _leaf(request)
    url = reverse("chat", args=[session.id])
    return redirect(url + (f"?{urlencode({'leaf': leaf})}" if leaf else ""))


@require_safe
@login_required
def panel(request: HttpRequest, session_id: str) -> HttpResponse:
    """The whole panel for the branch ending at `?leaf=` (the page re-fetches it live)."""
    return _panel(request, session_or_404(request, session_id))


@require_POST
@login_required
def edit_block(request: HttpRequest, session_id: str, label: str) -> HttpResponse:
    """Replace a writable block's text. A refusal (over budget, read-only) re-renders the
    panel with the engine's message beside the editor, the draft kept, nothing changed."""
    session = session_or_404(request, session_id)
    # Browsers submit a textarea's line breaks as CRLF; what the person typed is LF.
    content = request.POST.get("content", "").replace("\r\n", "\n")
    try:
        session.replace_context_block(label, content)
    except NotFound:
        return _panel(request, session, status=404, notice=f"There is no block {label!r} "
                      "any more; the panel shows the blocks as they are now.")
    except InvalidInput as exc:  # OverBudget and ReadOnly are InvalidInput
        return _panel(request, session, status=422, errors={label: (exc.detail, content)})
    return _done(request, session)


@require_POST
@login_required
def unload_skill(request: HttpRequest, session_id: str, label: str) -> HttpResponse:
    """Take a loaded skill out of the working context (it stays loadable)."""
    session = session_or_404(request, session_id)
    key = request.POST.get("key", "")
    try:
        session.unload_skill(label, key)
    except (NotFound, InvalidInput) as exc:
        return _panel(request, session, status=422, notice=exc.detail)
    return _done(request, session)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def diff_lines(old: str, new: str) -> list[tuple[str, str]]:
    """A unified diff as (kind, line): kind is add, del, hunk, file or ctx."""
    rows = []
    for line in difflib.unified_diff(old.splitlines(), new.splitlines(), "frozen prompt",
                                     "after refresh", lineterm=""):
        if line.startswith(("+++", "---")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        else:
            kind = {"+": "add", "-": "del"}.get(line[:1], "ctx")
            if is_rule(line[1:]):
                kind += " pp-rule"  # (a class of its own beside d-…)
        rows.append((kind, line))
    return rows


def _diff(request: HttpRequest, session: Session, *, status: int = 200,
          moved: bool = False) -> HttpResponse:
    frozen, frozen_at = session.context.frozen_prompt()
    new = would_be_prompt(session)
    return render(request, DIFF, {
        "session_id": session.id, "leaf_id": _leaf(request) or "", "frozen_at": frozen_at,
        "lines": diff_lines(frozen, new), "same": frozen == new, "expected": _digest(new),
        "changed": session.system_prompt_status().changed_blocks, "moved": moved,
    }, status=status)


@require_safe
@login_required
def prompt_diff(request: HttpRequest, session_id: str) -> HttpResponse:
    """The frozen prompt against the one a refresh would freeze, before confirming."""
    return _diff(request, session_or_404(request, session_id))


@require_POST
@login_required
def refresh_prompt(request: HttpRequest, session_id: str) -> HttpResponse:
    """Freeze the prompt anew: only the one whose diff was shown (`expected`); if the
    blocks moved meanwhile, the new diff comes back to be confirmed again."""
    session = session_or_404(request, session_id)
    expected = request.POST.get("expected")
    if expected and expected != _digest(would_be_prompt(session)):
        response = _diff(request, session, status=409, moved=True)
        response["HX-Retarget"], response["HX-Reswap"] = "#prompt-diff", "innerHTML"
        return response
    session.refresh_system_prompt()
    return _done(request, session)
