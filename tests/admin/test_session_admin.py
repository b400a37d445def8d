"""Session writes from the admin go through the engine."""

from __future__ import annotations

from django.urls import reverse

from sessions_app import models
from tests.admin.conftest import change_url
from tests.conftest import make_agent, session_key, user_msg


def test_rename_goes_through_the_engine_and_ignores_read_only_fields(
    admin_client, manager, branched
):
    before = manager.get(branched.id)
    other = make_agent("bob", "elsewhere")
    response = admin_client.post(change_url("session", branched.id), {
        "name": "  renamed  ", "agent": other.id, "message_count": 99, "input_tokens": 7,
        "_save": "Save",
    })
    assert response.status_code == 302
    after = manager.get(branched.id)
    assert after.name == "renamed"
    assert after.updated_at > before.updated_at  # the engine's rename stamps it
    assert (after.agent_id, after.message_count, after.input_tokens) == (
        before.agent_id, 5, 0)


def test_sessions_cannot_be_added_from_the_admin(admin_client):
    assert admin_client.get(reverse("admin:sessions_app_session_add")).status_code == 403


def test_delete_removes_messages_overlays_and_search_rows(admin_client, manager, session):
    session.append_message(user_msg("Lisbon flights in May", id="q"))
    session.add_compaction("trip", "q", "q")
    assert manager.search("Lisbon")
    url = reverse("admin:sessions_app_session_delete", args=[session.id])
    key = session_key(session.id)
    confirm = admin_client.get(url)
    assert confirm.status_code == 200 and b"Messages: 1" in confirm.content
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert manager.get(session.id) is None
    assert manager.search("Lisbon") == []
    assert not models.Message.objects.filter(session_id=key).exists()
    assert not models.Compaction.objects.filter(session_id=session.id).exists()


def test_bulk_delete_action_goes_through_the_engine(admin_client, manager):
    ids = [manager.create(f"s{i}").id for i in range(2)]
    kept = manager.create("kept").id
    for sid in ids + [kept]:
        manager.append(sid, user_msg(f"Porto trip {sid}"))
    response = admin_client.post(reverse("admin:sessions_app_session_changelist"), {
        "action": "delete_selected", "_selected_action": ids, "post": "yes",
    })
    assert response.status_code == 302
    assert [s.id for s in manager.list()] == [kept]
    assert {h.session_id for h in manager.search("Porto")} == {kept}


def test_agent_delete_removes_its_sessions_and_search_rows(admin_client, agent, manager, session):
    session.append_message(user_msg("Lisbon flights"))
    key = session_key(session.id)
    url = reverse("admin:sessions_app_agent_delete", args=[agent.id])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert not models.Agent.objects.filter(id=agent.id).exists()
    assert not models.Message.objects.filter(session_id=key).exists()
    assert manager.search("Lisbon") == []


def test_session_page_shows_blocks_read_only(admin_client, session):
    session.add_context("memory", description="Learned facts", max_tokens=500)
    session.replace_context_block("memory", "Prefers window seats.")
    session.add_context("gone", description="Old")
    session.remove_context("gone")
    html = admin_client.get(change_url("session", session.id)).content.decode()
    table = html[html.index('<table class="arbor-blocks">'):]
    table = table[:table.index("</table>")]
    row = table[table.index("<td>memory</td>"):]
    for cell in ("<td>writable</td>", "<td>500</td>", "Learned facts", "Prefers window seats.",
                 "&quot;max_tokens&quot;: 500"):
        assert cell in row[:row.index("</tr>")], cell
    assert "<td>gone</td><td>removed</td>" in table
    assert "<input" not in table and "<textarea" not in table
