"""Every admin page renders; the session page shows the tree read-only and escaped."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from sessions_app import models
from tests.admin.conftest import change_url, message_pk
from tests.conftest import user_msg

MODELS = ["agent", "session", "message", "compaction"]


@pytest.mark.parametrize("model", MODELS)
def test_changelist_renders(admin_client, branched, model):
    branched.add_compaction("a trip was planned", "u1", "a2")
    response = admin_client.get(reverse(f"admin:sessions_app_{model}_changelist"))
    assert response.status_code == 200


def test_change_pages_render(admin_client, agent, branched):
    overlay = branched.add_compaction("a trip was planned", "u1", "a2")
    compaction = models.Compaction.objects.get(overlay_id=overlay.id)
    for url in (change_url("agent", agent.id), change_url("session", branched.id),
                change_url("message", message_pk(branched, "a2")),
                change_url("compaction", compaction.seq)):
        assert admin_client.get(url).status_code == 200, url
    assert admin_client.get(reverse("admin:sessions_app_agent_add")).status_code == 200


def test_message_list_filters_by_session_and_role(admin_client, branched):
    url = reverse("admin:sessions_app_message_changelist")
    response = admin_client.get(url, {"session__id__exact": branched.id, "role__exact": "user"})
    assert response.status_code == 200
    assert [m.message_id for m in response.context["cl"].result_list] == ["u2", "u1"]


def test_session_page_shows_tree_in_depth_order_with_branch_markers(admin_client, branched):
    html = admin_client.get(change_url("session", branched.id)).content.decode()
    ids = [f">{mid}</a>" for mid in ("u1", "a1", "a2", "u2", "a3")]
    positions = [html.index(i) for i in ids]
    assert positions == sorted(positions)  # depth-first, branches oldest first
    for depth, mid in ((0, "u1"), (1, "a1"), (1, "a2"), (2, "u2"), (1, "a3")):
        row = html[html.rindex("<tr", 0, html.index(f">{mid}</a>")):]
        assert row.startswith(f'<tr><td style="padding-left:{8 + 16 * depth}px">')
    for n in (1, 2, 3):
        assert f"[branch {n} of 3]" in html
    assert "<strong>3 children</strong>" in html
    assert "[latest leaf]" in html
    assert "5 messages, 3 leaves, 1 branch point" in html


def test_session_page_query_count_does_not_grow_with_the_tree(admin_client, manager):
    def queries(length: int) -> int:
        info = manager.create(f"s{length}")
        manager.append_all(info.id, [user_msg(f"m{i}") for i in range(length)])
        with CaptureQueriesContext(connection) as ctx:
            assert admin_client.get(change_url("session", info.id)).status_code == 200
        return len(ctx.captured_queries)

    assert queries(3) == queries(40)


def test_user_text_is_escaped_everywhere(admin_client, agent, manager, session):
    evil = "<script>alert(1)</script>"
    models.Agent.objects.filter(id=agent.id).update(name=evil)
    manager.rename(session.id, evil)
    session.append_message(user_msg(evil, id="evil", metadata={"note": evil}))
    session.add_compaction(evil, "evil", "evil")
    compaction = models.Compaction.objects.get(session_id=session.id)
    urls = [change_url("session", session.id), change_url("message", message_pk(session, "evil")),
            change_url("compaction", compaction.seq), change_url("agent", session.agent_id)]
    urls += [reverse(f"admin:sessions_app_{m}_changelist") for m in MODELS]
    for url in urls:
        html = admin_client.get(url).content.decode()
        assert evil not in html, url
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html, url
