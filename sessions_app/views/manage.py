"""The pages beside the chat view: export and import, API keys, agent settings.

Each reuses what the JSON API runs: `memory_core.transfer` and the API's
`SessionDocument` for export/import, `auth.create_key`/`revoke` for keys, the API's
`BlockTemplate` schema and the engine's `specs_from_templates` for block templates. So a
page and the API accept and refuse the same things.
"""

from __future__ import annotations

import json
import re
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST, require_safe
from pydantic import TypeAdapter
from pydantic import ValidationError as PydanticError

from memory_core import ArborError
from memory_core.context import specs_from_templates
from memory_core.limits import KINDS, MAX_TEMPLATES, SCOPES
from memory_core.transfer import export_session, import_session

from .. import access, auth, models
from ..api.documents import SessionDocument
from ..api.render import dumps
from ..api.schemas import BlockTemplate
from . import imports
from .chat import resolve_leaf
from .common import agent_or_404, agents, session_or_404, session_row_or_404

MAX_KEY_NAME = 100
FIELDS = ("label", "kind", "description", "max_tokens", "scope", "content", "files")


def _filename(name: str, suffix: str) -> str:
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-.")[:60] or "session"
    return f"{stem}{suffix}"


def _attachment(body: bytes | str, *, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


# ------------------------------------------------------------------ export
@require_safe
@login_required
def export_json(request: HttpRequest, session_id: str) -> HttpResponse:
    """The same document as `GET /api/v1/sessions/{id}/export`: the whole tree."""
    row = session_row_or_404(request, session_id)
    document = export_session(access.manager_for(row.agent_id), row.id)
    return _attachment(dumps(document), content_type="application/json; charset=utf-8",
                       filename=_filename(row.name, ".arbor.json"))


@require_safe
@login_required
def export_markdown(request: HttpRequest, session_id: str) -> HttpResponse:
    """The branch on screen (`?leaf=`) as Markdown: a heading per message, its text parts,
    tool calls and results summarised in a line each."""
    session = session_or_404(request, session_id)
    row = session_row_or_404(request, session_id)
    try:
        leaf_id = resolve_leaf(request, session, request.GET.get("leaf") or None)
    except ArborError:
        return HttpResponse("No such message in this session.", status=404,
                            content_type="text/plain; charset=utf-8")
    path = session.get_history(leaf_id, raw=True) if leaf_id else []
    return _attachment(branch_markdown(row.name, path),
                       content_type="text/markdown; charset=utf-8",
                       filename=_filename(row.name, ".md"))


ROLE_HEADINGS = {"user": "You", "assistant": "Assistant", "tool": "Tool", "system": "System"}
SUMMARY_CHARS = 200


def branch_markdown(name: str, messages: list[Any]) -> str:
    out = [f"# {name or 'Untitled'}", ""]
    for m in messages:
        out += [f"## {ROLE_HEADINGS.get(m.role, m.role)}", "",
                f"<!-- {m.id} · {m.created_at.isoformat(timespec='seconds')} -->", ""]
        for part in m.parts:
            text = _part_markdown(part)
            if text:
                out += [text, ""]
    return "\n".join(out).rstrip() + "\n"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           default=str)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def _code(text: str) -> str:
    """An inline code span that no backtick inside `text` can close."""
    fence = "`" * (max((len(r) for r in re.findall(r"`+", text)), default=0) + 1)
    return f"{fence} {text} {fence}"


def _part_markdown(part: Any) -> str:
    if not isinstance(part, dict):
        return ""
    kind = str(part.get("type", ""))
    if kind == "text":
        return str(part.get("text", ""))
    if kind == "reasoning":
        return ""  # the model's scratch work is not part of the conversation
    if kind == "tool-call":
        return f"*Tool call* {_code(str(part.get('toolName', '')))}: {_code(_short(part.get('input')))}"
    if kind == "tool-result":
        return f"*Tool result*: {_code(_short(part.get('output')))}"
    if kind.startswith("tool-") or kind == "dynamic-tool":
        tool = kind[5:] if kind.startswith("tool-") else str(part.get("toolName", "tool"))
        line = f"*Tool* {_code(tool)}: {_code(_short(part.get('input')))}"
        if "output" in part:
            line += f" → {_code(_short(part.get('output')))}"
        if part.get("errorText"):
            line += f" (error: {_code(_short(part.get('errorText')))})"
        return line
    return f"*[{_short(kind)} part]*"


# ------------------------------------------------------------------ import
def _parse_document(upload: Any) -> tuple[dict[str, Any] | None, list[str]]:
    """The uploaded file as a checked document, or the reasons it is not one."""
    if upload is None:
        return None, ["Choose an exported session file (.json) to import."]
    limit = settings.ARBOR_MAX_BODY_BYTES
    if upload.size > limit:
        return None, [f"The file is {upload.size:,} bytes; the largest accepted is {limit:,}."]
    try:
        data = json.loads(upload.read())
    except (ValueError, UnicodeDecodeError) as exc:
        return None, [f"The file is not JSON ({exc}). Upload a file made by Export → JSON."]
    try:
        document = SessionDocument.model_validate(data)
    except PydanticError as exc:
        problems = [f"{'.'.join(str(p) for p in e['loc']) or 'document'}: {e['msg']}"
                    for e in exc.errors(include_url=False)[:10]]
        return None, ["The file is not an Arbor session export:", *problems]
    return document.model_dump(), []


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def import_page(request: HttpRequest) -> HttpResponse:
    """Upload an export into one of the user's agents: all of it, or nothing. Arbor's own
    document opens as its session; other tools' exports show what was imported."""
    mine = list(agents(request))
    chosen = request.POST.get("agent") or request.GET.get("agent") or ""
    fmt = request.POST.get("format") or "auto"
    errors: list[str] = []
    summary: dict[str, Any] | None = None
    if request.method == "POST":
        agent = agent_or_404(request, chosen)
        upload = request.FILES.get("document")
        found, value, errors = imports.sniff(upload, fmt)
        if found == "arbor":
            document, errors = _parse_document(upload)
            if document is not None:
                try:
                    info = import_session(access.manager_for(agent), document)
                except ArborError as exc:
                    errors = [f"The file could not be imported: {exc.detail}"]
                else:
                    return _go(request, reverse("chat", args=[info.id]))
        elif found is not None:
            summary, errors = imports.run(agent, found, value)
    status = 422 if errors else 201 if summary else 200
    if request.htmx and errors:
        status = 200  # a fragment to show in place; a 4xx would be a console error too
    context = {"agents": mine, "chosen": chosen, "errors": errors, "summary": summary,
               "formats": imports.CHOICES, "format": fmt,
               "max_bytes": settings.ARBOR_MAX_BODY_BYTES}
    template = "arbor/_import_result.html" if request.htmx else "arbor/import.html"
    return render(request, template, context, status=status)


def _go(request: HttpRequest, url: str) -> HttpResponse:
    if request.htmx:  # the page's upload is an htmx request: the browser follows this
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


# ------------------------------------------------------------------ API keys
def _keys_context(request: HttpRequest, **extra: Any) -> dict[str, Any]:
    keys = (models.ApiKey.objects.filter(user_id=request.user.pk).select_related("agent")
            .order_by("revoked_at", "-created_at"))
    return {"keys": keys, "agents": list(agents(request)), "max_key_name": MAX_KEY_NAME,
            **extra}


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def keys(request: HttpRequest) -> HttpResponse:
    """List, create (the raw key is in this one response only) and revoke API keys."""
    if request.method != "POST":
        return render(request, "arbor/keys.html", _keys_context(request))
    agent_id = request.POST.get("agent", "")
    agent = agent_or_404(request, agent_id) if agent_id else None
    name = request.POST.get("name", "").strip()[:MAX_KEY_NAME]
    row, raw = auth.create_key(request.user, agent=agent, name=name)
    response = render(request, "arbor/keys.html",
                      _keys_context(request, new_key=raw, new_row=row), status=201)
    response["Cache-Control"] = "no-store"  # the raw key must not be kept by a cache
    return response


@require_POST
@login_required
def revoke_key(request: HttpRequest, key_id: int) -> HttpResponse:
    key = models.ApiKey.objects.filter(id=key_id, user_id=request.user.pk).first()
    if key is None:
        return HttpResponse("No such key.", status=404)
    auth.revoke(key)
    return redirect(reverse("keys"))


# ------------------------------------------------------------------ agent settings
TEMPLATES = TypeAdapter(list[BlockTemplate])
FIELD_NAMES = {"label": "Label", "kind": "Kind", "max_tokens": "Budget (tokens)",
               "scope": "Scope", "description": "Description", "content": "Initial content",
               "files": "Skill files folder"}


def _rows_from_post(post: Any) -> list[dict[str, str]]:
    try:
        count = max(0, min(int(post.get("rows", "0")), MAX_TEMPLATES + 1))
    except ValueError:
        count = 0
    rows = []
    for i in range(count):
        row = {f: str(post.get(f"{f}-{i}", "")) for f in FIELDS}
        row["remove"] = "1" if post.get(f"remove-{i}") else ""
        if row["remove"] or not any(row[f].strip() for f in ("label", "description",
                                                             "max_tokens", "content", "files")):
            continue  # removed, or the blank "new block" row left empty
        rows.append(row)
    return rows


def _template(row: dict[str, str]) -> dict[str, Any]:
    out: dict[str, Any] = {"label": row["label"].strip()}
    for f in ("kind", "scope", "description", "content", "files"):
        value = row[f] if f == "content" else row[f].strip()
        if value:
            out[f] = value
    budget = row["max_tokens"].strip().replace(",", "").replace("_", "")
    if budget:  # strict schema: a number, or the text itself for a clear "not an integer"
        out["max_tokens"] = int(budget) if re.fullmatch(r"-?[0-9]{1,12}", budget) else budget
    return out


def _validate(rows: list[dict[str, str]]) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """The rows as stored templates, or what is wrong (by block, then field)."""
    if len(rows) > MAX_TEMPLATES:
        return None, [f"An agent can have at most {MAX_TEMPLATES} blocks."]
    try:
        checked = TEMPLATES.validate_python([_template(r) for r in rows])
    except PydanticError as exc:
        problems = []
        for e in exc.errors(include_url=False)[:20]:
            loc = list(e["loc"])
            where = (f"Block {loc[0] + 1} ({rows[loc[0]]['label'].strip() or 'no label'})"
                     if loc and isinstance(loc[0], int) and loc[0] < len(rows) else "Blocks")
            field = FIELD_NAMES.get(str(loc[1]), str(loc[1])) if len(loc) > 1 else "block"
            problems.append(f"{where}, {field}: {e['msg']}")
        return None, problems
    try:
        specs = specs_from_templates([t.model_dump(exclude_none=True) for t in checked])
    except ArborError as exc:
        return None, [exc.detail]
    return [{"label": s.label, **s.stored()} for s in specs], []


def _form_rows(templates: list[dict[str, Any]]) -> list[dict[str, str]]:
    rows = [{f: "" if t.get(f) is None else str(t.get(f)) for f in FIELDS} for t in templates]
    return [*rows, dict.fromkeys(FIELDS, "")]  # one blank row adds a block


@require_http_methods(["GET", "HEAD", "POST"])
@login_required
def agent_settings(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Edit the block templates new sessions of the agent start with. On any error the
    form comes back with the reasons and the agent is left as it was."""
    agent = agent_or_404(request, agent_id)
    errors: list[str] = []
    saved = request.GET.get("saved") == "1"
    templates = agent.context if isinstance(agent.context, list) else []
    rows = _form_rows(templates)
    if request.method == "POST":
        posted = _rows_from_post(request.POST)
        stored, errors = _validate(posted)
        if stored is not None:
            agent.context = stored
            agent.save(update_fields=["context", "updated_at"])
            return redirect(reverse("agent-settings", args=[agent.id]) + "?saved=1")
        rows = [*posted, dict.fromkeys(FIELDS, "")]
    context = {"agent": agent, "rows": rows, "errors": errors, "saved": saved,
               "kinds": KINDS, "scopes": SCOPES, "session_count":
               models.Session.objects.filter(agent_id=agent.id).count()}
    return render(request, "arbor/agent_settings.html", context, status=422 if errors else 200)
