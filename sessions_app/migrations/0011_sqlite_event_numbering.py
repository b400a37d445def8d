"""SQLite: the event-numbering trigger moves a session's counter only for an event past it
(issue 27).

0003's trigger set `event_seq` for every event stored, so a bulk write's thousand events
updated the session row a thousand times (1.8 µs each, a third of storing the event).
A bulk write (storage/outbox.py store_many) now moves the counter once, before its rows,
which the trigger then leaves alone; a single event (event_seq + 1) still moves it.
Postgres numbers its events in the statement that stores them: nothing to do there.
"""

from importlib import import_module

from django.db import migrations

from ._vendor import per_vendor

_OLD = import_module("sessions_app.migrations.0003_session_numbers").FORWARD["sqlite"][0]
_NEW = ("CREATE TRIGGER arbor_session_event_numbering AFTER INSERT ON arbor_session_event "
        "WHEN NEW.seq > (SELECT event_seq FROM arbor_session WHERE key = NEW.session_key) "
        "BEGIN UPDATE arbor_session SET event_seq = NEW.seq WHERE key = NEW.session_key; END")
_DROP = "DROP TRIGGER arbor_session_event_numbering"


class Migration(migrations.Migration):

    dependencies = [("sessions_app", "0010_sqlite_search_tf")]

    operations = [
        migrations.RunPython(per_vendor({"sqlite": [_DROP, _NEW]}),
                             per_vendor({"sqlite": [_DROP, _OLD]})),
    ]
