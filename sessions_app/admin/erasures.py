"""The erasure log (sessions_app/storage/erasure.py): read-only, never any content."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from .. import models
from .lists import input_filter


@admin.register(models.Erasure)
class ErasureAdmin(admin.ModelAdmin):  # type: ignore[type-arg]
    list_display = ("created_at", "scope", "agent_id", "session_id", "sessions", "messages",
                    "by", "by_id", "door", "purged_at")
    list_filter = ("scope", "by", "door", input_filter("agent_id__exact", "agent id"))
    date_hierarchy = "created_at"
    ordering = ("-id",)
    show_full_result_count = False

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False  # the log outlives what it names
