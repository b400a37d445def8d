"""SQLite: the message index keeps no copy of its bodies.

The FTS5 table held every message's search body a second time (about as many bytes as
the messages themselves). It becomes contentless (`content=''`): the token index, the
row sizes BM25 needs and the rowids stay; the bodies are rebuilt from the messages when
FTS5 needs them again, which is when a row is removed or replaced. That happens in
triggers on arbor_message (every delete and every edit of a message's parts, by the
engine, the admin or a cascade), through the SQL function `arbor_search_body`
(sessions_app.sqlite_index), from the row's parts and its new `search_extra` column:
the index tokens past the text's (a tool result's call name and input), which only the
append that made the row could see.

The FTS5 docsize table names every indexed rowid, so the triggers remove exactly the
rows that are there, also when a flush deleted the session before its messages (the
agent's number is then found from the rowid, not from the session).

Postgres: only the column (its index lives in arbor_message.search_vector).
"""

import importlib

from django.db import migrations, models

from memory_core.messages import project_text
from memory_core.words import index_tokens

import orjson

# A row's scope tokens, as rows.message_scope makes them, from a session and an agent id.
_SCOPE = ("'§s' || replace({session}, '-', '') || ' §a' || replace({agent}, '-', '')")
_REMOVE = """INSERT INTO arbor_message_fts(arbor_message_fts, rowid, body, scope)
             SELECT 'delete', d.id, arbor_search_body(old.parts, old.search_extra), {scope}
             FROM {source}
             JOIN arbor_message_fts_docsize d ON d.id = (k.key << 36) | old.seq
             WHERE {where}"""
_IN_SESSION = ("arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id", "s.id = old.session_id")
_SESSION_GONE = ("arbor_search_key k",
                 "NOT EXISTS (SELECT 1 FROM arbor_session WHERE id = old.session_id)")


def _remove(source_where: tuple[str, str]) -> str:
    source, where = source_where
    return _REMOVE.format(scope=_SCOPE.format(session="old.session_id", agent="k.agent_id"),
                          source=source, where=where)


TRIGGERS = [
    f"""CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
          {_remove(_IN_SESSION)};
          {_remove(_SESSION_GONE)};
        END""",
    f"""CREATE TRIGGER arbor_message_fts_au AFTER UPDATE OF parts, search_extra ON arbor_message
        BEGIN
          {_remove(_IN_SESSION)};
          INSERT INTO arbor_message_fts(rowid, body, scope)
          SELECT (k.key << 36) | new.seq, arbor_search_body(new.parts, new.search_extra),
                 {_SCOPE.format(session="new.session_id", agent="k.agent_id")}
          FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
          WHERE s.id = new.session_id;
        END""",
]
BATCH = 2000


def _forward(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cur:
        cur.execute("CREATE VIRTUAL TABLE arbor_message_fts_bare "
                    "USING fts5(body, scope, tokenize='ascii', content='')")
        last = 0
        while True:
            cur.execute(
                """SELECT m.seq, m.parts, f.rowid, f.body, f.scope FROM arbor_message m
                   JOIN arbor_session s ON s.id = m.session_id
                   JOIN arbor_search_key k ON k.agent_id = s.agent_id
                   JOIN arbor_message_fts f ON f.rowid = (k.key << 36) | m.seq
                   WHERE m.seq > %s ORDER BY m.seq LIMIT %s""", [last, BATCH])
            rows = cur.fetchall()
            if not rows:
                break
            last = rows[-1][0]
            extras, bodies = [], []
            for seq, parts, rowid, body, scope in rows:
                # The tokens past the text's are the ones its append added from the call.
                text = index_tokens(project_text(orjson.loads(parts)))
                indexed = body.split()
                extra = indexed[len(text):] if indexed[:len(text)] == text else []
                if extra:
                    extras.append((" ".join(extra), seq))
                bodies.append((rowid, " ".join(text + extra), scope))
            cur.executemany("UPDATE arbor_message SET search_extra = %s WHERE seq = %s", extras)
            cur.executemany("INSERT INTO arbor_message_fts_bare(rowid, body, scope) "
                            "VALUES (%s, %s, %s)", bodies)
        for statement in ("DROP TRIGGER arbor_message_fts_ad", "DROP TABLE arbor_message_fts",
                          "ALTER TABLE arbor_message_fts_bare RENAME TO arbor_message_fts",
                          *TRIGGERS):
            cur.execute(statement)


def _backward(apps, schema_editor):
    if schema_editor.connection.vendor != "sqlite":
        return
    with schema_editor.connection.cursor() as cur:
        for statement in (
            "DROP TRIGGER arbor_message_fts_ad",
            "DROP TRIGGER arbor_message_fts_au",
            "CREATE VIRTUAL TABLE arbor_message_fts_full USING fts5(body, scope, tokenize='ascii')",
            f"""INSERT INTO arbor_message_fts_full (rowid, body, scope)
                SELECT (k.key << 36) | m.seq, arbor_search_body(m.parts, m.search_extra),
                       {_SCOPE.format(session="m.session_id", agent="s.agent_id")}
                FROM arbor_message m JOIN arbor_session s ON s.id = m.session_id
                JOIN arbor_search_key k ON k.agent_id = s.agent_id""",
            "DROP TABLE arbor_message_fts",
            "ALTER TABLE arbor_message_fts_full RENAME TO arbor_message_fts",
            importlib.import_module("sessions_app.migrations.0012_search_ranges").KEYED_TRIGGER,
        ):
            cur.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0013_drop_message_text")]

    operations = [
        migrations.AddField(
            model_name="message", name="search_extra",
            field=models.TextField(blank=True, null=True),
        ),
        migrations.RunPython(_forward, _backward),
    ]
