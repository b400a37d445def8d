"""Compactions are view-only; removing one goes through the engine."""

from __future__ import annotations

from django.urls import reverse

from sessions_app import models
from tests.admin.conftest import change_url


def test_delete_removes_the_overlay_and_restores_history(admin_client, branched):
    overlay = branched.add_compaction("asked about Porto", "u1", "u2")
    assert [m.role for m in branched.get_history("u2")] == ["system"]
    seq = models.Compaction.objects.get(overlay_id=overlay.id).seq
    assert admin_client.post(change_url("compaction", seq), {"summary": "x"}).status_code == 403
    url = reverse("admin:sessions_app_compaction_delete", args=[seq])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert branched.get_compactions() == []
    assert [m.id for m in branched.get_history("u2")] == ["u1", "a2", "u2"]
