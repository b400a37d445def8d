"""Admin pages stay small and cheap however large the tables: no select lists every
row of a table, list pages never COUNT(*) a whole table and make no per-row queries."""

from __future__ import annotations

import re

import pytest
from django.contrib import admin
from django.contrib.auth.models import User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory_core import SessionManager
from sessions_app import models
from sessions_app.admin.lists import COUNT_CAP, CappedPaginator
from sessions_app.auth import create_key
from tests.admin.conftest import change_url, message_pk
from tests.conftest import user_msg

LARGE = [models.Agent, models.Session, models.Message, models.Compaction, models.ApiKey]
MAX_OPTIONS = 20  # the action menu and the like; never one per row
MAX_PAGE_BYTES = 400_000  # the session page's tree stops at MAX_TREE_ROWS rows


@pytest.fixture
def crowd(agent):
    """300 users, each with an agent and a key; one session of 2,000 messages."""
    users = User.objects.bulk_create([User(username=f"u{i}") for i in range(300)])
    agents = models.Agent.objects.bulk_create(
        [models.Agent(owner=u, name=f"agent {u.username}") for u in users])
    for u, a in zip(users[:30], agents[:30], strict=True):
        create_key(u, agent=a, name="k")
    manager = SessionManager.for_agent(agent)
    for i in range(30):
        manager.create(f"small {i}")
    big = manager.get_session(manager.create("big").id)
    manager.append_all(big.id, [user_msg(f"m{i}", id=f"m{i}") for i in range(2000)])
    big.add_compaction("the first half", "m0", "m999")
    return big


def _pages(big) -> list[str]:
    key = models.ApiKey.objects.first()
    compaction = models.Compaction.objects.get(session_id=big.id)
    return [
        change_url("session", big.id), change_url("message", message_pk(big, "m1000")),
        change_url("compaction", compaction.seq), change_url("agent", models.Session.objects.get(id=big.id).agent_id),
        reverse("admin:sessions_app_agent_add"), change_url("apikey", key.pk),
        reverse("admin:sessions_app_apikey_add"),
        *[reverse(f"admin:sessions_app_{m._meta.model_name}_changelist") for m in LARGE],
        reverse("admin:sessions_app_message_changelist") + f"?session__id__exact={big.id}",
    ]


def test_no_page_has_a_select_of_every_row(admin_client, crowd):
    for url in _pages(crowd):
        response = admin_client.get(url)
        assert response.status_code == 200, url
        html = response.content.decode()
        assert html.count("<option") <= MAX_OPTIONS, url
        assert len(html) < MAX_PAGE_BYTES, (url, len(html))


def test_message_list_filters_by_session_id_without_listing_sessions(admin_client, crowd):
    url = reverse("admin:sessions_app_message_changelist")
    response = admin_client.get(url, {"session__id__exact": crowd.id, "role__exact": "user"})
    html = response.content.decode()
    assert f'name="session__id__exact" value="{crowd.id}"' in html
    assert "small 7" not in html  # no list of sessions in the sidebar
    assert {m.session.id for m in response.context["cl"].result_list} == {crowd.id}


def test_large_tables_never_show_a_full_result_count():
    for model in LARGE:
        model_admin = admin.site._registry[model]
        assert model_admin.show_full_result_count is False, model
        assert model_admin.show_facets is admin.ShowFacets.NEVER, model
        assert model_admin.paginator is CappedPaginator, model


def test_list_count_stops_at_the_cap(admin_client, session, monkeypatch):
    monkeypatch.setattr("sessions_app.admin.lists.COUNT_CAP", 5)
    for i in range(8):
        session.append_message(user_msg(f"m{i}"))
    html = admin_client.get(reverse("admin:sessions_app_message_changelist")).content.decode()
    assert "more than 5 messages" in html
    assert COUNT_CAP == 10_000


def _list_queries(admin_client, model: str) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert admin_client.get(reverse(f"admin:sessions_app_{model}_changelist")).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def _grow(manager, n: int) -> None:
    user = User.objects.get(username="alice")
    for i in range(n):
        s = manager.get_session(manager.create(f"s{i}").id)
        s.append_message(user_msg("hello", id="a"))
        s.append_message(user_msg("again", id="b"))
        s.add_compaction("hi", "a", "b")
        create_key(user, agent=models.Agent.objects.get(id=manager.agent_id), name=f"k{i}")
        models.Agent.objects.create(owner=user, name=f"extra {i}")


@pytest.mark.parametrize("model", ["agent", "session", "message", "compaction", "apikey"])
def test_list_page_query_count_does_not_grow_with_rows(admin_client, manager, model,
                                                      django_assert_max_num_queries):
    _grow(manager, 2)
    few = _list_queries(admin_client, model)
    _grow(manager, 40)
    with django_assert_max_num_queries(len(few)):
        many = _list_queries(admin_client, model)
    assert len(many) == len(few)
    for sql in many:  # a count of a table is over a LIMITed subquery, so bounded
        if re.match(r"SELECT COUNT\(", sql, re.IGNORECASE):
            assert "LIMIT" in sql.upper(), sql
