"""SQLite: the counts BM25 needs, kept beside the index so a search reads its own scope
only (issue 27; storage/vendors/sqlite_counts.py says what each table holds).

The message triggers of 0002 gain the counting of a removed or replaced row: a pending
row of -1 (and +1 for the new text) and the removal of its repeat counts. They come
before the index's own 'delete', while the row's docsize still says it is indexed.
The counts of an existing index are filled here: documents per term from fts5vocab,
rows and tokens from FTS5's docsize, repeats from each message's tokens (as the triggers'
`arbor_search_body` rebuilds them). Postgres keeps its own (0005): nothing to do there.
"""

from importlib import import_module
from typing import Any

from django.db import migrations

_search = import_module("sessions_app.migrations.0002_search")
_SCOPE = _search._SCOPE
_KEY = "(k.key << 36) | {row}.seq"
_OF_ROW = ("FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id "
           "WHERE s.key = {row}.session_key")
_UNCOUNT_OLD = f"""
          INSERT INTO arbor_search_pending(sign, size, terms)
              SELECT -1, old.search_len + 2, arbor_search_terms(old.parts, old.search_extra)
              FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
              JOIN arbor_message_fts_docsize d ON d.id = {_KEY.format(row="old")}
              WHERE s.key = old.session_key;
          DELETE FROM arbor_search_repeat
              WHERE id = (SELECT {_KEY.format(row="old")} {_OF_ROW.format(row="old")})
              AND term IN (SELECT key FROM json_each(
                  arbor_search_repeats(old.parts, old.search_extra)))"""
_COUNT_NEW = f"""
          INSERT INTO arbor_search_pending(sign, size, terms)
              SELECT 1, new.search_len + 2, arbor_search_terms(new.parts, new.search_extra)
              {_OF_ROW.format(row="new")};
          INSERT INTO arbor_search_repeat(term, id, tf)
              SELECT j.key, {_KEY.format(row="new")}, j.value
              FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id,
                   json_each(arbor_search_repeats(new.parts, new.search_extra)) j
              WHERE s.key = new.session_key"""
_INDEX_NEW = f"""
          INSERT INTO arbor_message_fts(rowid, body, scope)
          SELECT (k.key << 36) | new.seq, arbor_search_body(new.parts, new.search_extra), {_SCOPE}
          FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
          WHERE s.key = new.session_key"""

FORWARD = [
    "CREATE TABLE arbor_search_df (term text NOT NULL PRIMARY KEY, df integer NOT NULL) "
    "WITHOUT ROWID",
    """CREATE TABLE arbor_search_pending (id integer NOT NULL PRIMARY KEY,
         sign integer NOT NULL, size integer NOT NULL, terms text NOT NULL)""",
    """CREATE TABLE arbor_search_repeat (term text NOT NULL, id integer NOT NULL,
         tf integer NOT NULL, PRIMARY KEY (term, id)) WITHOUT ROWID""",
    "DROP TRIGGER arbor_message_fts_ad",
    "DROP TRIGGER arbor_message_fts_au",
    f"""CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
          {_UNCOUNT_OLD};
          {_search._REMOVE_OLD};
        END""",
    f"""CREATE TRIGGER arbor_message_fts_au AFTER UPDATE OF parts, search_extra ON arbor_message
        BEGIN
          {_UNCOUNT_OLD};
          {_search._REMOVE_OLD};
          {_INDEX_NEW};
          {_COUNT_NEW};
        END""",
]
BACKWARD = [
    "DROP TRIGGER arbor_message_fts_ad",
    "DROP TRIGGER arbor_message_fts_au",
    *[s for s in _search.SQLITE if "CREATE TRIGGER arbor_message_fts_a" in s],
    "DROP TABLE arbor_search_repeat",
    "DROP TABLE arbor_search_pending",
    "DROP TABLE arbor_search_df",
]


def _fill(cur: Any) -> None:
    from sessions_app.storage.vendors.sqlite_counts import row_terms
    from sessions_app.storage.vendors.sqlite_index import search_tokens
    from sessions_app.storage.vendors.sqlite_rank import doc_size

    cur.execute("CREATE VIRTUAL TABLE temp.arbor_vocab USING "
                "fts5vocab(main, arbor_message_fts, 'col')")
    cur.execute("INSERT INTO arbor_search_df(term, df) "
                "SELECT term, doc FROM temp.arbor_vocab WHERE col = 'body'")
    cur.execute("DROP TABLE temp.arbor_vocab")
    rows = tokens = 0
    cur.execute("SELECT sz FROM arbor_message_fts_docsize")
    while batch := cur.fetchmany(10_000):
        rows += len(batch)
        tokens += sum(doc_size(size) for (size,) in batch)
    cur.execute("INSERT INTO arbor_search_df(term, df) VALUES ('§n', %s), ('§t', %s)",
                [rows, tokens])
    cur.execute(f"""SELECT d.id, m.parts, m.search_extra FROM arbor_message m
                    JOIN arbor_session s ON s.key = m.session_key
                    JOIN arbor_search_key k ON k.agent_id = s.agent_id
                    JOIN arbor_message_fts_docsize d ON d.id = {_KEY.format(row="m")}""")
    repeats = []
    while batch := cur.fetchmany(2_000):  # the messages' texts are not all held at once
        repeats += [(term, key, n) for key, parts, extra in batch
                    for term, n in row_terms(search_tokens(parts, extra))[1]]
    cur.executemany("INSERT INTO arbor_search_repeat(term, id, tf) VALUES (%s, %s, %s)",
                    repeats)


def forward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in FORWARD:
        schema_editor.execute(statement)
    with schema_editor.connection.cursor() as cur:
        _fill(cur)


def backward(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "sqlite":
        return
    for statement in BACKWARD:
        schema_editor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0007_last_leaf")]
    operations = [migrations.RunPython(forward, backward)]
