"""Operators' admin: trees are read-only here; every write goes through the engine.

Renames, deletions and overlay removals call SessionManager / Session, so search rows,
overlays and re-parenting stay consistent; no admin form can set a parent id.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db.models import Count, F, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from memory_core import ArborError, InvalidInput, NotFound, SessionManager
from memory_core import Session as EngineSession
from memory_core.context import specs_from_templates
from memory_core.limits import ROLES
from memory_core.tree import TreeRow, depth_order, preview

from . import models
from .agents import delete_agent

MAX_TREE_ROWS = 500  # the change page stays usable for long sessions
MAX_INDENT = 40  # deeper levels keep this indent; the depth column still tells
MAX_CHILDREN = 100  # a message page lists this many children; the rest are one link away
MAX_BLOCK_CHARS = 2000  # of a block's content on the session page
COUNT_CAP = 10_000  # list pages count at most this many rows (then say "more than")


def _engine(row: models.Session) -> EngineSession:
    return SessionManager.for_agent(row.agent_id).get_session(row.id)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(model: Any, lines: list[str], counts: dict[str, int]) -> tuple[Any, ...]:
    """get_deleted_objects' answer without the ORM walking every message row."""
    return lines, {str(model._meta.verbose_name_plural): len(lines), **counts}, set(), []


# ------------------------------------------------------------------ list pages
class CappedPaginator(Paginator):
    """Counts at most COUNT_CAP + 1 rows: an unfiltered list of a huge table costs one
    bounded query, not a COUNT(*) over the table. `capped` says the count stopped."""

    @cached_property
    def count(self) -> int:
        rows = self.object_list
        if isinstance(rows, QuerySet):  # only the keys: annotations cost nothing here
            rows = rows.values("pk")
        return int(rows[:COUNT_CAP + 1].count())

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP


class InputFilter(admin.SimpleListFilter):
    """A text box instead of a list of values, so the sidebar never enumerates a large
    table (RelatedFieldListFilter reads every row of the related model, AllValues runs
    SELECT DISTINCT over this one). The parameter is an exact lookup, e.g. session__id__exact."""

    template = "admin/arbor_input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return []

    def has_output(self) -> bool:
        return True

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(**{self.parameter_name: value}) if value else queryset

    def choices(self, changelist: Any) -> Any:
        yield {
            "name": self.parameter_name, "value": self.value() or "",
            "keep": [(k, v) for k, v in changelist.params.items() if k != self.parameter_name],
            "clear": changelist.get_query_string(remove=[self.parameter_name]),
        }


def input_filter(lookup: str, title: str) -> type[InputFilter]:
    name = lookup.replace("__", "_").title().replace("_", "") + "Filter"
    return type(name, (InputFilter,), {"parameter_name": lookup, "title": title})


class LargeTableAdmin(admin.ModelAdmin):
    """List pages of tables that grow without bound: no second COUNT(*) of the whole
    table, no facet counts, a capped count for the paginator."""

    show_full_result_count = False
    show_facets = admin.ShowFacets.NEVER
    paginator = CappedPaginator


# ------------------------------------------------------------------ tree display
def _branch_positions(rows: list[TreeRow]) -> dict[str, tuple[int, int]]:
    """id -> (position, siblings) for messages that share their parent with others."""
    sizes = Counter(r.parent_id for r in rows)
    seen: Counter[str | None] = Counter()
    out: dict[str, tuple[int, int]] = {}
    for r in rows:  # insertion order, as depth_order orders children
        seen[r.parent_id] += 1
        if sizes[r.parent_id] > 1:
            out[r.id] = (seen[r.parent_id], sizes[r.parent_id])
    return out


def _tree_row(row: TreeRow, depth: int, *, branch: tuple[int, int] | None, leaf: bool,
              href: str) -> SafeString:
    markers = []
    if branch:
        markers.append(format_html('<span class="arbor-branch">[branch {} of {}]</span>', *branch))
    if leaf:
        markers.append(format_html('<span class="arbor-leaf">[{}]</span>', "latest leaf"))
    children: str | SafeString = _count(row.child_count, "child", "children")
    if row.child_count > 1:
        children = format_html("<strong>{} children</strong>", row.child_count)
    return format_html(
        '<tr><td style="padding-left:{}px">{}<a href="{}">{}</a> <strong>{}</strong> {}</td>'
        "<td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
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
    branches = _branch_positions(rows)
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
                .values_list("seq", "message_id", "role", "text")[:MAX_CHILDREN + 1])
    if not rows:
        return format_html("<p>{}</p>", "None (a leaf).")
    items = format_html_join("", '<li><a href="{}">{}</a> <strong>{}</strong> {}</li>', (
        (reverse("admin:sessions_app_message_change", args=[seq]), mid, role, preview(text))
        for seq, mid, role, text in rows[:MAX_CHILDREN]))
    if len(rows) <= MAX_CHILDREN:
        return format_html("<p>{}</p><ul>{}</ul>", _count(len(rows), "child", "children"), items)
    total = models.Message.objects.filter(parent_seq=message.seq).count()
    url = reverse("admin:sessions_app_message_changelist")
    return format_html('<p>The first {} of {} children.</p><ul>{}</ul><p><a href="{}?{}">{}</a></p>',
                       MAX_CHILDREN, total, items, url, urlencode({"parent_seq": message.seq}),
                       "All children")


# ------------------------------------------------------------------------ admins
class AgentForm(forms.ModelForm):
    class Meta:
        model = models.Agent
        fields = "__all__"

    def clean_context(self) -> Any:
        # Templates are checked by the engine's own rules, so no session gets a bad block.
        value = self.cleaned_data["context"]
        try:
            specs_from_templates(value or [])
        except InvalidInput as exc:
            raise forms.ValidationError(exc.detail) from exc
        return value


@admin.register(models.Agent)
class AgentAdmin(LargeTableAdmin):
    form = AgentForm
    list_display = ("name", "owner", "session_count", "created_at")
    list_filter = (input_filter("owner__username__exact", "owner (username)"),)
    raw_id_fields = ("owner",)
    search_fields = ("name",)
    readonly_fields = ("id", "created_at", "updated_at")
    list_select_related = ("owner",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[models.Agent]:
        # A count per agent on the page (the agent's index), not a GROUP BY over every session.
        sessions = (models.Session.objects.filter(agent_id=OuterRef("pk")).order_by()
                    .values("agent_id").annotate(n=Count("id")).values("n"))
        return super().get_queryset(request).annotate(
            _sessions=Coalesce(Subquery(sessions), 0))

    @admin.display(description="sessions", ordering="_sessions")
    def session_count(self, obj: models.Agent) -> SafeString:
        url = reverse("admin:sessions_app_session_changelist")
        return format_html('<a href="{}?{}">{}</a>', url,
                           urlencode({"agent__id__exact": obj.id}), obj._sessions)

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        totals = models.Session.objects.filter(agent__in=objs).aggregate(
            sessions=Count("id"), messages=Sum("message_count"))
        return _summary(models.Agent, [f"Agent: {a}" for a in objs],
                        {"sessions": totals["sessions"], "messages": totals["messages"] or 0})

    def delete_model(self, request: HttpRequest, obj: models.Agent) -> None:
        delete_agent(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Agent]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


@admin.register(models.Session)
class SessionAdmin(LargeTableAdmin):
    list_display = ("display_name", "agent", "model", "source", "end_reason", "message_count",
                    "tokens", "cost", "updated_at")
    list_filter = (input_filter("agent__id__exact", "agent id"),
                   input_filter("model__exact", "model"), input_filter("source__exact", "source"),
                   input_filter("end_reason__exact", "end reason"))
    search_fields = ("name",)
    list_select_related = ("agent",)
    ordering = ("-updated_at",)
    actions = ("refresh_prompt", "compact_now")
    # Only the name is editable (through SessionManager.rename); moving a session to
    # another agent would strand its search rows, and counters belong to the engine.
    readonly_fields = ("id", "agent", "parent_session", "model", "source", "end_reason",
                       "input_tokens", "output_tokens", "estimated_cost", "message_count",
                       "search_tokens", "created_at", "updated_at", "messages_link", "tree",
                       "compactions", "status", "compaction_error", "compaction_failed_at",
                       "system_prompt", "context_blocks")
    fieldsets = (
        (None, {"fields": ("name", "id", "agent", "parent_session", "model", "source",
                           "end_reason")}),
        ("Usage", {"fields": ("input_tokens", "output_tokens", "estimated_cost",
                              "message_count", "search_tokens", "created_at", "updated_at")}),
        ("Context", {"fields": ("system_prompt", "context_blocks")}),
        ("Messages (read-only)", {"fields": ("messages_link", "tree", "compactions", "status",
                                             "compaction_error", "compaction_failed_at")}),
    )

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # sessions are created by agents, through the engine

    @admin.display(description="name", ordering="name")
    def display_name(self, obj: models.Session) -> str:
        return str(obj)

    @admin.display(description="tokens", ordering=F("input_tokens") + F("output_tokens"))
    def tokens(self, obj: models.Session) -> int:
        return obj.input_tokens + obj.output_tokens

    @admin.display(description="cost", ordering="estimated_cost")
    def cost(self, obj: models.Session) -> str:
        return f"{obj.estimated_cost:.4f}"

    @admin.display(description="message list")
    def messages_link(self, obj: models.Session) -> SafeString:
        url = reverse("admin:sessions_app_message_changelist")
        return format_html('<a href="{}?{}">{}</a>', url, urlencode({"session__id__exact": obj.id}),
                           "all messages of this session")

    @admin.display(description="tree")
    def tree(self, obj: models.Session) -> SafeString:
        return tree_html(_engine(obj))

    @admin.display(description="compactions")
    def compactions(self, obj: models.Session) -> SafeString:
        return compactions_html(_engine(obj))

    @admin.display(description="system prompt")
    def system_prompt(self, obj: models.Session) -> SafeString:
        return prompt_html(_engine(obj))

    @admin.display(description="blocks")
    def context_blocks(self, obj: models.Session) -> SafeString:
        return blocks_html(_engine(obj))

    # ---------------------------------------------- engine operations (actions, buttons)
    @admin.action(description="Refresh the system prompt", permissions=["change"])
    def refresh_prompt(self, request: HttpRequest, queryset: QuerySet[models.Session]) -> None:
        done = 0
        for row in queryset:
            try:
                _engine(row).refresh_system_prompt()
            except ArborError as exc:
                self.message_user(request, f"{row}: {exc.detail}", messages.ERROR)
            else:
                done += 1
        if done:
            self.message_user(request, "Refreshed the system prompt of "
                              f"{_count(done, 'session', 'sessions')}.", messages.SUCCESS)

    @admin.action(description="Compact now", permissions=["change"])
    def compact_now(self, request: HttpRequest, queryset: QuerySet[models.Session]) -> None:
        for row in queryset:
            try:
                overlay = _engine(row).compact()
            except ArborError as exc:  # CompactionError: the engine changed nothing
                self.message_user(request, f"Compacting {row} failed: {exc.detail}",
                                  messages.ERROR)
            else:
                if overlay is None:
                    self.message_user(request, f"{row}: nothing to compact.", messages.INFO)
                else:
                    self.message_user(request, f"{row}: compacted {overlay.from_message_id} → "
                                      f"{overlay.to_message_id}.", messages.SUCCESS)

    def get_urls(self) -> list[URLPattern]:
        def button(action: str, name: str) -> URLPattern:
            def view(request: HttpRequest, object_id: str) -> HttpResponse:
                return self._button(request, object_id, action)
            return path(f"<path:object_id>/{name}/", self.admin_site.admin_view(
                require_POST(view)), name=f"sessions_app_session_{action}")

        return [button("refresh_prompt", "refresh-prompt"), button("compact_now", "compact"),
                *super().get_urls()]

    def _button(self, request: HttpRequest, object_id: str, action: str) -> HttpResponse:
        """The change page's buttons run the list actions on one session."""
        row = self.get_object(request, unquote(object_id))
        if row is None:
            raise Http404("no such session")
        if not self.has_change_permission(request, row):
            raise PermissionDenied
        getattr(self, action)(request, self.get_queryset(request).filter(pk=row.pk))
        return HttpResponseRedirect(reverse("admin:sessions_app_session_change",
                                            args=[quote(row.pk)]))

    def save_model(self, request: HttpRequest, obj: models.Session, form: Any, change: bool) -> None:
        if change and "name" in form.changed_data:
            SessionManager.for_agent(obj.agent_id).rename(obj.id, form.cleaned_data["name"])

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        sessions = list(objs)
        overlays = models.Compaction.objects.filter(session__in=sessions).count()
        return _summary(models.Session, [f"Session: {s}" for s in sessions], {
            "messages": sum(s.message_count for s in sessions), "compactions": overlays})

    def delete_model(self, request: HttpRequest, obj: models.Session) -> None:
        SessionManager.for_agent(obj.agent_id).delete(obj.id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Session]) -> None:
        for agent_id, session_id in queryset.values_list("agent_id", "id"):
            SessionManager.for_agent(agent_id).delete(session_id)


class ReadOnlyAdmin(LargeTableAdmin):
    """View and delete only; viewing follows the default view permission."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


class RoleFilter(admin.SimpleListFilter):
    """The four roles, not SELECT DISTINCT role over every message."""

    title = "role"
    parameter_name = "role__exact"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(r, r) for r in ROLES]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        value = self.value()
        return queryset.filter(role=value) if value else queryset


@admin.register(models.Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("session", "message_id", "role", "text_preview", "created_at")
    list_filter = (input_filter("session__id__exact", "session id"), RoleFilter)
    search_fields = ("message_id", "text")
    list_select_related = ("session",)
    ordering = ("-seq",)
    fields = readonly_fields = ("session_link", "message_id", "parent", "role", "created_at",
                                "children", "text", "parts_json", "metadata_json")

    @admin.display(description="session")
    def session_link(self, obj: models.Message) -> SafeString:
        return format_html('<a href="{}">{}</a> ({})', reverse(
            "admin:sessions_app_session_change", args=[quote(obj.session_id)]),
            obj.session_id, obj.session.name or "unnamed")

    @admin.display(description="parent")
    def parent(self, obj: models.Message) -> SafeString:
        if obj.parent_seq is None:
            return format_html("{}", "none (a root)")
        return format_html('<a href="{}">{}</a>', reverse(
            "admin:sessions_app_message_change", args=[obj.parent_seq]), obj.parent_message_id)

    @admin.display(description="text")
    def text_preview(self, obj: models.Message) -> str:
        return preview(obj.text)

    @admin.display(description="children")
    def children(self, obj: models.Message) -> SafeString:
        return children_html(obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[models.Message]:
        return super().get_queryset(request).select_related("session")  # the change page too

    @admin.display(description="parts")
    def parts_json(self, obj: models.Message) -> SafeString:
        return format_html("<pre>{}</pre>", _pretty(obj.parts))

    @admin.display(description="metadata")
    def metadata_json(self, obj: models.Message) -> SafeString:
        return format_html("<pre>{}</pre>", _pretty(obj.metadata))

    def delete_model(self, request: HttpRequest, obj: models.Message) -> None:
        # The engine re-attaches children and drops touched overlays and search rows.
        _engine(obj.session).delete_messages([obj.message_id])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Message]) -> None:
        by_session: dict[tuple[str, str], list[str]] = {}
        for agent_id, session_id, message_id in queryset.values_list(
            "session__agent_id", "session_id", "message_id"
        ):
            by_session.setdefault((agent_id, session_id), []).append(message_id)
        for (agent_id, session_id), ids in by_session.items():
            try:
                SessionManager.for_agent(agent_id).get_session(session_id).delete_messages(ids)
            except NotFound:
                pass  # the session went meanwhile, and its messages with it


@admin.register(models.Compaction)
class CompactionAdmin(ReadOnlyAdmin):
    list_display = ("overlay_id", "session", "from_message_id", "to_message_id",
                    "summary_preview", "created_at")
    list_filter = (input_filter("session__id__exact", "session id"),)
    ordering = ("-seq",)
    search_fields = ("overlay_id", "summary")
    list_select_related = ("session",)
    fields = readonly_fields = ("overlay_id", "session", "from_message_id", "to_message_id",
                                "created_at", "summary")

    @admin.display(description="summary")
    def summary_preview(self, obj: models.Compaction) -> str:
        return preview(obj.summary)

    def delete_model(self, request: HttpRequest, obj: models.Compaction) -> None:
        _engine(obj.session).remove_compaction(obj.overlay_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Compaction]) -> None:
        for obj in queryset.select_related("session"):
            try:
                self.delete_model(request, obj)
            except NotFound:
                pass  # removed meanwhile


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        return text


# ------------------------------------------------------------------- API keys
class ApiKeyForm(forms.ModelForm):
    class Meta:
        model = models.ApiKey
        fields = ("user", "name", "agent")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        agent, user = data.get("agent"), data.get("user")
        if agent is not None and user is not None and agent.owner_id != user.pk:
            raise forms.ValidationError("The agent must belong to the key's user.")
        return data


@admin.register(models.ApiKey)
class ApiKeyAdmin(LargeTableAdmin):
    """Keys are made here (the raw key is shown once, after saving) and revoked here;
    only a hash is stored, so a lost key is revoked and replaced, never recovered."""

    form = ApiKeyForm
    list_display = ("prefix_display", "name", "user", "agent_limit", "created_at", "revoked_at")
    list_filter = ("revoked_at", input_filter("user__username__exact", "user (username)"))
    raw_id_fields = ("user", "agent")  # ids, not a select of every user and agent
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user", "agent")
    readonly_fields = ("prefix_display", "created_at", "revoked_at")
    actions = ("revoke_keys",)

    @admin.display(description="agent limit", ordering="agent__name")
    def agent_limit(self, obj: models.ApiKey) -> str:
        return str(obj.agent) if obj.agent_id else "all the user's agents"

    @admin.display(description="key")
    def prefix_display(self, obj: models.ApiKey) -> str:
        return f"{obj.prefix}…" if obj.prefix else "(shown once, after saving)"

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        # A key's owner and scope are fixed once it exists: make a new key instead.
        if obj is not None:
            return (*self.readonly_fields, "user", "agent")
        return self.readonly_fields

    def save_model(self, request: HttpRequest, obj: models.ApiKey, form: Any, change: bool) -> None:
        if change:
            super().save_model(request, obj, form, change)
            return
        from .auth import create_key

        key, raw = create_key(obj.user, agent=obj.agent, name=obj.name)
        obj.pk, obj.prefix, obj.key_hash, obj.created_at = (
            key.pk, key.prefix, key.key_hash, key.created_at)
        obj._state.adding = False
        messages.warning(request, format_html(
            "The new API key is <code>{}</code>. Copy it now: it is stored hashed and "
            "will not be shown again.", raw))

    @admin.action(description="Revoke selected keys")
    def revoke_keys(self, request: HttpRequest, queryset: QuerySet[models.ApiKey]) -> None:
        from django.utils import timezone

        count = queryset.filter(revoked_at__isnull=True).update(revoked_at=timezone.now())
        self.message_user(request, f"Revoked {_count(count, 'key', 'keys')}.")
