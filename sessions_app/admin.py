"""Operators' admin: trees are read-only here; every write goes through the engine.

Renames, deletions and overlay removals call SessionManager / Session, so search rows,
overlays and re-parenting stay consistent; no admin form can set a parent id.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, F, QuerySet, Sum
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from memory_core import InvalidInput, NotFound, SessionManager
from memory_core import Session as EngineSession
from memory_core.context import specs_from_templates
from memory_core.tree import TreeRow, depth_order, preview

from . import models
from .agents import delete_agent

MAX_TREE_ROWS = 500  # the change page stays usable for long sessions
MAX_INDENT = 40  # deeper levels keep this indent; the depth column still tells


def _engine(row: models.Session) -> EngineSession:
    return SessionManager.for_agent(row.agent_id).get_session(row.id)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _summary(model: Any, lines: list[str], counts: dict[str, int]) -> tuple[Any, ...]:
    """get_deleted_objects' answer without the ORM walking every message row."""
    return lines, {str(model._meta.verbose_name_plural): len(lines), **counts}, set(), []


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
class AgentAdmin(admin.ModelAdmin):
    form = AgentForm
    list_display = ("name", "owner", "session_count", "created_at")
    list_filter = ("owner",)
    search_fields = ("name",)
    readonly_fields = ("id", "created_at", "updated_at")
    list_select_related = ("owner",)

    def get_queryset(self, request: HttpRequest) -> QuerySet[models.Agent]:
        return super().get_queryset(request).annotate(_sessions=Count("sessions"))

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
class SessionAdmin(admin.ModelAdmin):
    list_display = ("display_name", "agent", "model", "source", "end_reason", "message_count",
                    "tokens", "cost", "updated_at")
    list_filter = ("agent", "model", "source", "end_reason")
    search_fields = ("name",)
    list_select_related = ("agent",)
    ordering = ("-updated_at",)
    show_full_result_count = False
    # Only the name is editable (through SessionManager.rename); moving a session to
    # another agent would strand its search rows, and counters belong to the engine.
    readonly_fields = ("id", "agent", "parent_session", "model", "source", "end_reason",
                       "input_tokens", "output_tokens", "estimated_cost", "message_count",
                       "search_tokens", "created_at", "updated_at", "messages_link", "tree",
                       "compactions")
    fieldsets = (
        (None, {"fields": ("name", "id", "agent", "parent_session", "model", "source",
                           "end_reason")}),
        ("Usage", {"fields": ("input_tokens", "output_tokens", "estimated_cost",
                              "message_count", "search_tokens", "created_at", "updated_at")}),
        ("Messages (read-only)", {"fields": ("messages_link", "tree", "compactions")}),
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


class ReadOnlyAdmin(admin.ModelAdmin):
    """View and delete only; viewing follows the default view permission."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ("session", "message_id", "role", "text_preview", "created_at")
    list_filter = ("role",)
    search_fields = ("message_id", "text")
    list_select_related = ("session",)
    ordering = ("-seq",)
    show_full_result_count = False
    fields = readonly_fields = ("session", "message_id", "parent_message_id", "role",
                                "created_at", "children", "text", "parts_json", "metadata_json")

    @admin.display(description="text")
    def text_preview(self, obj: models.Message) -> str:
        return preview(obj.text)

    @admin.display(description="children")
    def children(self, obj: models.Message) -> str:
        kids = _engine(obj.session).get_branches(obj.message_id)
        return ", ".join(k.id for k in kids) or "none (leaf)"

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
class ApiKeyAdmin(admin.ModelAdmin):
    """Keys are made here (the raw key is shown once, after saving) and revoked here;
    only a hash is stored, so a lost key is revoked and replaced, never recovered."""

    form = ApiKeyForm
    list_display = ("prefix_display", "name", "user", "agent", "created_at", "revoked_at")
    list_filter = ("revoked_at",)
    search_fields = ("name", "prefix", "user__username")
    list_select_related = ("user", "agent")
    readonly_fields = ("prefix_display", "created_at", "revoked_at")
    actions = ("revoke_keys",)

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
        from django.contrib import messages

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
