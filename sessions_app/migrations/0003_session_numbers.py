"""How sessions and their events are numbered, by vendor.

A session's `key` (the bigint its messages and events name it by, 8 bytes where its uuid
text takes 36): Postgres takes it from the sequence `arbor_session_key_seq`, SQLite from
max(key) + 1 inside the writer's IMMEDIATE transaction (models.Session.save).

An event's `seq` is the session's `event_seq` + 1. Postgres bumps the counter and inserts
the event in one statement (a data-modifying CTE, see the outbox); SQLite's INSERT reads
event_seq + 1 under the write lock and this trigger moves the counter.
"""

from django.db import migrations

from ._vendor import per_vendor

FORWARD = {
    "sqlite": [
        "CREATE TRIGGER arbor_session_event_numbering AFTER INSERT ON arbor_session_event "
        "BEGIN UPDATE arbor_session SET event_seq = NEW.seq WHERE key = NEW.session_key; END",
    ],
    # (past any session already numbered: this runs again after migrating back past it)
    "postgresql": ["CREATE SEQUENCE arbor_session_key_seq AS bigint",
                   "SELECT setval('arbor_session_key_seq', "
                   "coalesce((SELECT max(key) FROM arbor_session), 0) + 1, false)"],
}
BACKWARD = {
    "sqlite": ["DROP TRIGGER IF EXISTS arbor_session_event_numbering"],
    "postgresql": ["DROP SEQUENCE IF EXISTS arbor_session_key_seq"],
}


class Migration(migrations.Migration):

    replaces = [
        ("sessions_app", "0008_event_outbox"),
        ("sessions_app", "0011_session_branched"),
        ("sessions_app", "0015_session_key"),
        ("sessions_app", "0018_event_session_key"),
    ]

    dependencies = [("sessions_app", "0002_search")]

    operations = [
        migrations.RunPython(per_vendor(FORWARD), per_vendor(BACKWARD)),
    ]
