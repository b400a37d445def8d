"""API keys: shown once when made, listed by prefix, revoked at once; never shown by hash."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils.html import format_html

from .. import models
from .lists import (
    LargeTableAdmin,
    _count,
    input_filter,
)


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
        from ..auth import create_key

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
