"""Messages are view-only in the admin; deleting goes through the engine."""

from __future__ import annotations

from django.urls import reverse

from sessions_app import models
from tests.admin.conftest import change_url, message_pk


def _parents(session) -> dict[str, str | None]:
    return {r.id: r.parent_id for r in session.get_tree()}


def test_change_page_has_no_editable_fields(admin_client, branched):
    response = admin_client.get(change_url("message", message_pk(branched, "u2")))
    assert response.status_code == 200
    assert list(response.context["adminform"].form.fields) == []
    html = response.content.decode()
    assert 'name="parent_seq"' not in html and 'name="_save"' not in html
    assert "Porto please" in html


def test_post_to_change_is_refused_and_changes_nothing(admin_client, branched):
    before = _parents(branched)
    url = change_url("message", message_pk(branched, "u2"))
    response = admin_client.post(url, {
        "parent_seq": message_pk(branched, "a1"), "role": "system",
        "text": "hacked", "_save": "Save",
    })
    assert response.status_code == 403
    assert _parents(branched) == before
    assert branched.get_message("u2").text == "Porto please"


def test_messages_cannot_be_added(admin_client):
    assert admin_client.get(reverse("admin:sessions_app_message_add")).status_code == 403


def test_delete_reattaches_children_to_the_parent(admin_client, branched):
    url = reverse("admin:sessions_app_message_delete", args=[message_pk(branched, "a2")])
    assert admin_client.post(url, {"post": "yes"}).status_code == 302
    assert branched.get_message("a2") is None
    assert branched.get_message("u2").parent_id == "u1"
    assert [m.id for m in branched.get_history("u2")] == ["u1", "u2"]
    assert branched.get_message_count() == 4


def test_bulk_delete_reattaches_to_the_nearest_kept_ancestor(admin_client, manager, branched):
    other = manager.get_session(manager.create("other").id)
    other.append_message({"role": "user", "content": "keep me", "id": "k"})
    selected = [message_pk(branched, "u1"), message_pk(branched, "a2")]
    response = admin_client.post(reverse("admin:sessions_app_message_changelist"), {
        "action": "delete_selected", "_selected_action": selected, "post": "yes",
    })
    assert response.status_code == 302
    assert _parents(branched) == {"a1": None, "u2": None, "a3": None}
    assert other.get_message("k") is not None
    assert models.Message.objects.count() == 4


def test_change_page_links_the_parent_the_session_and_every_child(admin_client, branched):
    html = admin_client.get(change_url("message", message_pk(branched, "u1"))).content.decode()
    for child in ("a1", "a2", "a3"):
        assert f'<a href="{change_url("message", message_pk(branched, child))}">{child}</a>' in html
    assert "3 children" in html and "none (a root)" in html
    assert f'<a href="{change_url("session", branched.id)}">{branched.id}</a>' in html
    html = admin_client.get(change_url("message", message_pk(branched, "u2"))).content.decode()
    assert f'<a href="{change_url("message", message_pk(branched, "a2"))}">a2</a>' in html
    assert "None (a leaf)." in html


def test_many_children_are_cut_with_a_link_to_all_of_them(admin_client, branched, monkeypatch):
    monkeypatch.setattr("sessions_app.admin.display.MAX_CHILDREN", 2)
    u1 = message_pk(branched, "u1")
    html = admin_client.get(change_url("message", u1)).content.decode()
    assert "The first 2 of 3 children." in html and ">a3</a>" not in html
    url = reverse("admin:sessions_app_message_changelist")
    assert f"{url}?parent_seq={u1}" in html
    listed = admin_client.get(url, {"parent_seq": u1}).context["cl"].result_list
    assert sorted(m.message_id for m in listed) == ["a1", "a2", "a3"]
