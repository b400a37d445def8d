"""SQLite: the counts BM25 needs, kept beside the index so a search reads its own scope
only (issue 27; storage/vendors/sqlite_counts.py says what each table holds).

The message triggers of 0002 gain the counting of a removed or replaced row: a pending
row of -1 (and +1 for the new text), whose own trigger removes (files) its repeat counts. They come
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
# arbor_search_counted gives a row's {"terms": [...], "repeats": {...} or null}: one call
# into Python a statement (each call waits for the GIL: a deletion of thousands of rows
# beside another writing thread slowed with each one more).
_PENDING = """
          INSERT INTO arbor_search_pending(sign, size, terms, row, repeats)
              SELECT {sign}, {row}.search_len + 2, json_extract(c, '$.terms'), {key},
                     json_extract(c, '$.repeats')
              FROM (SELECT arbor_search_counted({row}.parts, {row}.search_extra) AS c
                    LIMIT 1),  -- (LIMIT: not flattened, so called once)
                   arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
              {docsize}WHERE s.key = {row}.session_key"""
_UNCOUNT_OLD = _PENDING.format(
    sign=-1, row="old", key="d.id",
    docsize=f"JOIN arbor_message_fts_docsize d ON d.id = {_KEY.format(row='old')}\n              ")
_COUNT_NEW = _PENDING.format(sign=1, row="new", key=_KEY.format(row="new"), docsize="")
_INDEX_NEW = f"""
          INSERT INTO arbor_message_fts(rowid, body, scope)
          SELECT (k.key << 36) | new.seq, arbor_search_body(new.parts, new.search_extra), {_SCOPE}
          FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
          WHERE s.key = new.session_key"""

FORWARD = [
    "CREATE TABLE arbor_search_df (term text NOT NULL PRIMARY KEY, df integer NOT NULL) "
    "WITHOUT ROWID",
    """CREATE TABLE arbor_search_pending (id integer NOT NULL PRIMARY KEY,
         sign integer NOT NULL, size integer NOT NULL, terms text NOT NULL,
         row integer, repeats text)""",
    """CREATE TABLE arbor_search_repeat (term text NOT NULL, id integer NOT NULL,
         tf integer NOT NULL, PRIMARY KEY (term, id)) WITHOUT ROWID""",
    # A row's repeat counts come and go with its pending row: one statement a write.
    """CREATE TRIGGER arbor_search_pending_ai AFTER INSERT ON arbor_search_pending
       WHEN new.repeats IS NOT NULL AND new.sign <> 0 BEGIN
         INSERT INTO arbor_search_repeat(term, id, tf)
         SELECT key, new.row, value FROM json_each(new.repeats) WHERE new.sign > 0;
         DELETE FROM arbor_search_repeat
         WHERE new.sign < 0 AND id = new.row
           AND term IN (SELECT key FROM json_each(new.repeats));
       END""",
    # A bulk write's counts, summed over its rows, go straight in (sign 0: terms holds
    # {term: documents}, repeats [[term, count, rowid], ...]): folds would not keep up.
    """CREATE TRIGGER arbor_search_pending_bulk AFTER INSERT ON arbor_search_pending
       WHEN new.sign = 0 BEGIN
         INSERT INTO arbor_search_df(term, df) SELECT key, value FROM json_each(new.terms)
         WHERE true ON CONFLICT(term) DO UPDATE SET df = df + excluded.df;
         INSERT INTO arbor_search_repeat(term, tf, id)
         SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(new.repeats);
         DELETE FROM arbor_search_pending WHERE id = new.id;
       END""",
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
    "DROP TRIGGER arbor_search_pending_bulk",
    "DROP TRIGGER arbor_search_pending_ai",
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
    dependencies = [("sessions_app", "0008_bulk_term_counts")]
    operations = [migrations.RunPython(forward, backward)]
