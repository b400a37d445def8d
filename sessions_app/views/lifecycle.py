"""An agent's retention policy and whole export on its settings page (issue 31)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_POST, require_safe

from memory_core import InvalidInput

from ..api.agent_export import export_lines
from ..lifecycle import retention
from .common import agent_or_404


def _number(value: str, name: str) -> int | None:
    value = value.strip()
    if not value:
        return None
    if not value.isdigit():
        raise InvalidInput(f"{name} must be a whole number, or empty to keep forever")
    return int(value)


@require_POST
@login_required
def agent_retention(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Save the policy; a bad value comes back on the page with the reason, unsaved."""
    agent = agent_or_404(request, agent_id)
    back = reverse("agent-settings", args=[agent.id])
    try:
        days = _number(request.POST.get("max_age_days", ""), "Days kept")
        count = _number(request.POST.get("max_sessions", ""), "Sessions kept")
        retention.check(max_age_days=days, max_sessions=count)
    except InvalidInput as exc:
        return redirect(back + "?" + urlencode({"retention_error": exc.detail}))
    agent.retention_max_age_days, agent.retention_max_sessions = days, count
    agent.save(update_fields=["retention_max_age_days", "retention_max_sessions",
                              "updated_at"])
    return redirect(back + "?retention=saved")


@require_safe
@login_required
def agent_export(request: HttpRequest, agent_id: str) -> HttpResponse:
    """Everything of the agent as the API's JSON Lines export, downloaded."""
    agent = agent_or_404(request, agent_id)
    response = StreamingHttpResponse(export_lines(agent), content_type="application/jsonl")
    response["Content-Disposition"] = f'attachment; filename="arbor-agent-{agent.id}.jsonl"'
    return response
