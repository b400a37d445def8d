"""Agents: their block templates are checked like the API's; deletion goes through the engine."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.db.models import Count, OuterRef, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode
from django.utils.safestring import SafeString

from memory_core import InvalidInput
from memory_core.context import specs_from_templates

from .. import models
from ..agents import delete_agent
from ..lifecycle import retention
from ..storage import actor
from .lists import (
    LargeTableAdmin,
    _summary,
    input_filter,
)


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

    def clean(self) -> Any:
        data = super().clean()
        try:
            retention.check(max_age_days=data.get("retention_max_age_days"),
                            max_sessions=data.get("retention_max_sessions"))
        except InvalidInput as exc:
            raise forms.ValidationError(exc.detail) from exc
        return data


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
        actor.set_admin(request.user)  # the erasure log names who
        delete_agent(obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[models.Agent]) -> None:
        for obj in queryset:
            self.delete_model(request, obj)
