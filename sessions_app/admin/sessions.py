"""Sessions: the tree, overlays, blocks and prompt shown read-only; Refresh prompt and Compact now go through the engine."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.db.models import F, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from memory_core import ArborError, SessionManager

from .. import models
from ..lifecycle import retention
from ..storage import actor
from .display import (
    _engine,
    blocks_html,
    compactions_html,
    prompt_html,
    tree_html,
)
from .lists import (
    LargeTableAdmin,
    _count,
    _summary,
    input_filter,
)


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
        (None, {"fields": ("name", "pinned", "id", "agent", "parent_session", "model",
                           "source", "end_reason")}),
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
        if change and "pinned" in form.changed_data:
            retention.set_pinned(obj.id, form.cleaned_data["pinned"])

    def get_deleted_objects(self, objs: Any, request: HttpRequest) -> tuple[Any, ...]:
        sessions = list(objs)
        overlays = models.Compaction.objects.filter(session__in=sessions).count()
        return _summary(models.Session, [f"Session: {s}" for s in sessions], {
            "messages": sum(s.message_count for s in sessions), "compactions": overlays})

    def delete_model(self, request: HttpRequest, obj: models.Session) -> None:
        actor.set_admin(request.user)  # the erasure log names who
        SessionManager.for_agent(obj.agent_id).delete(obj.id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Session]) -> None:
        actor.set_admin(request.user)  # the erasure log names who
        for agent_id, session_id in queryset.values_list("agent_id", "id"):
            SessionManager.for_agent(agent_id).delete(session_id)
