"""Messages and overlays: read-only, linked parent and children; deletions through the engine."""

from __future__ import annotations

import json
from typing import Any

from django.contrib import admin
from django.contrib.admin.utils import quote
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from memory_core import NotFound, SessionManager
from memory_core.limits import ROLES
from memory_core.tree import preview

from .. import models
from ..storage import actor
from .display import (
    _engine,
    children_html,
)
from .lists import (
    ReadOnlyAdmin,
    input_filter,
)


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
    search_fields = ("message_id", "parts")
    list_select_related = ("session",)
    ordering = ("-seq",)
    fields = readonly_fields = ("session_link", "message_id", "parent", "role", "created_at",
                                "children", "text", "parts_json", "metadata_json")

    @admin.display(description="session")
    def session_link(self, obj: models.Message) -> SafeString:
        return format_html('<a href="{}">{}</a> ({})', reverse(
            "admin:sessions_app_session_change", args=[quote(obj.session.id)]),
            obj.session.id, obj.session.name or "unnamed")

    @admin.display(description="parent")
    def parent(self, obj: models.Message) -> SafeString:
        if obj.parent_seq is None:
            return format_html("{}", "none (a root)")
        parent_id = models.Message.objects.filter(seq=obj.parent_seq).values_list(
            "message_id", flat=True).first()
        return format_html('<a href="{}">{}</a>', reverse(
            "admin:sessions_app_message_change", args=[obj.parent_seq]), parent_id)

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
        actor.set_admin(request.user)  # the erasure log names who
        # The engine re-attaches children and drops touched overlays and search rows.
        _engine(obj.session).delete_messages([obj.message_id])

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Message]) -> None:
        actor.set_admin(request.user)  # the erasure log names who
        by_session: dict[tuple[str, str], list[str]] = {}
        for agent_id, session_id, message_id in queryset.values_list(
            "session__agent_id", "session__id", "message_id"
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
