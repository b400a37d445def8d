"""The hot paths' driver cursor (storage/hot.py): the same transaction and the same
errors as Django's cursor, and every statement still visible to whoever counts them."""

from __future__ import annotations

import pytest
from django.db import DatabaseError, connection, transaction
from django.db.backends.utils import CursorWrapper
from django.db.transaction import TransactionManagementError
from django.test.utils import CaptureQueriesContext

from sessions_app.storage import hot
from tests.conftest import user_msg

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_driver_cursor_is_used_when_nobody_counts_queries(session):
    session.append_message(user_msg("connect first"))
    with hot.cursor() as cur:
        assert not isinstance(cur, CursorWrapper)
        cur.execute("SELECT %s, %s", [1, "two"])
        assert cur.fetchone() == (1, "two")


def test_an_append_and_a_read_run_their_statements_on_the_driver_cursor(session, monkeypatch):
    session.append_message(user_msg("connect first"))
    through_django: list[str] = []
    wrapped = CursorWrapper.execute

    def execute(self, sql, params=None):
        through_django.append(sql)
        return wrapped(self, sql, params)

    monkeypatch.setattr(CursorWrapper, "execute", execute)
    session.append_message(user_msg("second"))
    assert [m.text for m in session.get_history()] == ["connect first", "second"]
    assert session.search("second")
    # Only the transaction's own BEGIN (SQLite) goes through Django's wrapper.
    assert [s for s in through_django if "arbor_" in s] == []


def test_counted_queries_go_through_django_and_see_every_statement(session):
    session.append_message(user_msg("first"))
    with CaptureQueriesContext(connection) as captured:
        with hot.cursor() as cur:
            assert isinstance(cur, CursorWrapper)
        session.append_message(user_msg("second"))
    statements = [q["sql"] for q in captured.captured_queries]
    assert any("INSERT INTO arbor_message" in s for s in statements)
    assert any("arbor_session_event" in s for s in statements)


def test_database_errors_are_djangos(session):
    session.append_message(user_msg("connect first"))
    with pytest.raises(DatabaseError), hot.cursor() as cur:
        cur.execute("SELECT no_such_column FROM arbor_message")


def test_a_rolled_back_transaction_undoes_the_driver_cursors_writes(session):
    session.append_message(user_msg("kept"))
    with pytest.raises(RuntimeError), transaction.atomic():
        session.append_message(user_msg("undone"))
        raise RuntimeError("roll back")
    assert [m.text for m in session.get_history()] == ["kept"]
    assert session.get_message_count() == 1


def test_a_broken_transaction_refuses_further_statements(session):
    session.append_message(user_msg("connect first"))
    with transaction.atomic():
        transaction.set_rollback(True)
        with pytest.raises(TransactionManagementError), hot.cursor():
            pass


def test_placeholders_convert_as_djangos_do():
    assert hot._qmark("SELECT %s, '%%s', '100%%' WHERE a LIKE 'x%%'") == (
        "SELECT ?, '%s', '100%' WHERE a LIKE 'x%'")
