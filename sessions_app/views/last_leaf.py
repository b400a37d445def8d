"""Where a person was in a session: the leaf they last had on screen, kept on the server
(arbor_last_leaf, one row per person and session), so reopening the session from the
sidebar, another tab or another device lands on that branch. `?leaf=` still wins.

The chat page records it when it renders a branch and, through `shown`, when the branch
on screen changes in the page (a branch switch, a new message, a new branch).
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_POST

from memory_core.limits import MAX_ID_LENGTH

from .. import models
from .common import session_or_404


def remembered(request: HttpRequest, session_id: str) -> str | None:
    """The leaf this person last had on screen in the session, if any."""
    return (models.LastLeaf.objects.filter(user_id=request.user.pk, session_id=session_id)
            .values_list("leaf_id", flat=True).first())


def remember(request: HttpRequest, session_id: str, leaf_id: str | None,
             known: str | None = None) -> None:
    """Keep `leaf_id` as the person's place; `known` is what `remembered` read already
    (no write when nothing changed)."""
    if not leaf_id or leaf_id == known:
        return
    mine = models.LastLeaf.objects.filter(user_id=request.user.pk, session_id=session_id)
    if mine.update(leaf_id=leaf_id):
        return
    try:
        with transaction.atomic():
            models.LastLeaf.objects.create(user_id=request.user.pk, session_id=session_id,
                                           leaf_id=leaf_id)
    except IntegrityError:  # another tab stored it first: this one is newer
        mine.update(leaf_id=leaf_id)


@require_POST
@login_required
def shown(request: HttpRequest, session_id: str) -> HttpResponse:
    """The page's branch changed: `leaf` (a message of this session) is the place now."""
    session = session_or_404(request, session_id)
    leaf = request.POST.get("leaf", "")
    if not leaf or len(leaf) > MAX_ID_LENGTH:
        return JsonResponse({"error": "invalid_input", "detail": "leaf: a message id"},
                            status=422)
    if session.get_message(leaf) is None:
        return JsonResponse({"error": "not_found", "detail": "No such message."}, status=404)
    remember(request, session.id, leaf)
    return HttpResponse(status=204)
