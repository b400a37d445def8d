"""Faster search on both databases.

SQLite: an agent's index rows get a rowid range of their own, so an agent-wide search
reads only that range of the FTS5 index (a rowid range is the one filter FTS5 applies
while it walks the index) instead of intersecting with the agent's scope token, which
every one of the agent's rows holds. Each agent gets a number (`arbor_search_key`, made
by a trigger when the agent is made, never reused); an index row's rowid is
`number << 36 | message seq`. Rows are moved to their new rowids here.

Postgres: document frequencies kept per term (`arbor_term_df`, plus deltas that writers
append without contending for a row, folded in every few thousand), so a query reads a
few rows instead of counting each term over the whole GIN index. Triggers keep them for
every write (engine, admin, cascades). Message counts and token totals stay where they
were (the session counters).
"""

from django.db import migrations

from sessions_app.migrations._vendor import per_vendor

# The session names the agent. A flush may delete sessions before their messages:
# then (only then) every agent's number is tried. (0014 restores it going back.)
KEYED_TRIGGER = """CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
         DELETE FROM arbor_message_fts WHERE rowid = (
           SELECT (k.key << 36) | old.seq FROM arbor_session s
           JOIN arbor_search_key k ON k.agent_id = s.agent_id WHERE s.id = old.session_id);
         DELETE FROM arbor_message_fts
         WHERE NOT EXISTS (SELECT 1 FROM arbor_session WHERE id = old.session_id)
           AND rowid IN (SELECT (key << 36) | old.seq FROM arbor_search_key);
       END"""
SQLITE_FORWARD = [
    """CREATE TABLE arbor_search_key (
         key integer NOT NULL PRIMARY KEY AUTOINCREMENT,
         agent_id varchar(36) NOT NULL UNIQUE)""",
    "INSERT INTO arbor_search_key (agent_id) SELECT id FROM arbor_agent ORDER BY created_at, id",
    # Kept when the agent goes: its messages may be deleted after it (the index trigger
    # below needs the number), and a number is never given to another agent.
    """CREATE TRIGGER arbor_search_key_ai AFTER INSERT ON arbor_agent BEGIN
         INSERT OR IGNORE INTO arbor_search_key (agent_id) VALUES (new.id);
       END""",
    "CREATE VIRTUAL TABLE arbor_message_fts_keyed USING fts5(body, scope, tokenize='ascii')",
    """INSERT INTO arbor_message_fts_keyed (rowid, body, scope)
       SELECT (k.key << 36) | f.rowid, f.body, f.scope
       FROM arbor_message_fts f
       JOIN arbor_message m ON m.seq = f.rowid
       JOIN arbor_session s ON s.id = m.session_id
       JOIN arbor_search_key k ON k.agent_id = s.agent_id""",
    "DROP TRIGGER arbor_message_fts_ad",
    "DROP TABLE arbor_message_fts",
    "ALTER TABLE arbor_message_fts_keyed RENAME TO arbor_message_fts",
    KEYED_TRIGGER,
]
SQLITE_BACKWARD = [
    "CREATE VIRTUAL TABLE arbor_message_fts_plain USING fts5(body, scope, tokenize='ascii')",
    """INSERT INTO arbor_message_fts_plain (rowid, body, scope)
       SELECT rowid & 68719476735, body, scope FROM arbor_message_fts""",
    "DROP TRIGGER arbor_message_fts_ad",
    "DROP TABLE arbor_message_fts",
    "ALTER TABLE arbor_message_fts_plain RENAME TO arbor_message_fts",
    """CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
         DELETE FROM arbor_message_fts WHERE rowid = old.seq;
       END""",
    "DROP TRIGGER arbor_search_key_ai",
    "DROP TABLE arbor_search_key",
]

# The lexemes of some vectors, once per vector, scope tokens ('§…') left out: no
# query can name them.
def _lexemes(vectors: str, sign: str = "") -> str:
    return (f"SELECT lexeme, {sign}1 AS n FROM {vectors}, unnest(tsvector_to_array(v)) AS lexeme "
            "WHERE lexeme NOT LIKE '§%%'")


# The row count and the token total (two scope tokens a row, as FTS5 counts them), under
# names no word can have.
_TOTALS = ("SELECT '§n', count(*) FROM {rows} "
           "UNION ALL SELECT '§t', coalesce(sum(search_len + 2), 0) FROM {rows}")

POSTGRES_FORWARD = [
    "CREATE TABLE arbor_term_df (term text PRIMARY KEY, df bigint NOT NULL)",
    """CREATE TABLE arbor_term_delta (
         id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         term text NOT NULL, d bigint NOT NULL)""",
    "CREATE INDEX arbor_term_delta_term ON arbor_term_delta (term) INCLUDE (d)",
    "INSERT INTO arbor_term_df (term, df) SELECT lexeme, count(*) FROM ("
    + _lexemes("(SELECT search_vector AS v FROM arbor_message) m") + ") x GROUP BY lexeme",
    f"INSERT INTO arbor_term_df (term, df) SELECT * FROM ({_TOTALS.format(rows='arbor_message')}) x",
    # Writers only append deltas (no row two writers could both wait for); the writer
    # whose deltas cross a multiple of 4096 ids folds every committed delta into
    # arbor_term_df, unless another is folding (then a later one will).
    """CREATE FUNCTION arbor_term_fold() RETURNS void LANGUAGE plpgsql AS $$
       BEGIN
         IF NOT pg_try_advisory_xact_lock(7245338101) THEN
           RETURN;
         END IF;
         WITH moved AS (DELETE FROM arbor_term_delta RETURNING term, d),
              summed AS (SELECT term, sum(d) AS d FROM moved GROUP BY term)
         INSERT INTO arbor_term_df AS t (term, df)
         SELECT term, d FROM summed ORDER BY term
         ON CONFLICT (term) DO UPDATE SET df = t.df + excluded.df;
         DELETE FROM arbor_term_df WHERE df = 0;
       END $$""",
    """CREATE FUNCTION arbor_term_count() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         added bigint;
       BEGIN
         IF TG_OP = 'INSERT' THEN
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, count(*) FROM (""" + _lexemes("(SELECT search_vector AS v FROM new_rows) r")
    + """) x GROUP BY lexeme
           UNION ALL SELECT term, n FROM (""" + _TOTALS.format(rows="new_rows") + """) t(term, n)
           WHERE n <> 0;
         ELSIF TG_OP = 'DELETE' THEN
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, -count(*) FROM (""" + _lexemes("(SELECT search_vector AS v FROM old_rows) r")
    + """) x GROUP BY lexeme
           UNION ALL SELECT term, -n FROM (""" + _TOTALS.format(rows="old_rows") + """) t(term, n)
           WHERE n <> 0;
         ELSE
           INSERT INTO arbor_term_delta (term, d)
           SELECT '§t', sum(n.search_len) - sum(o.search_len)
           FROM old_rows o JOIN new_rows n ON n.seq = o.seq
           HAVING sum(n.search_len) <> sum(o.search_len);  -- only rows whose vector changed (most updates move parent pointers)
           WITH changed AS (
             SELECT o.search_vector AS old_v, n.search_vector AS new_v
             FROM old_rows o JOIN new_rows n ON n.seq = o.seq
             WHERE n.search_vector <> o.search_vector)
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, sum(n) FROM (
             """ + _lexemes("(SELECT new_v AS v FROM changed) c") + """
             UNION ALL
             """ + _lexemes("(SELECT old_v AS v FROM changed) c", "-") + """) x
           GROUP BY lexeme HAVING sum(n) <> 0;
         END IF;
         GET DIAGNOSTICS added = ROW_COUNT;
         IF added > 0 THEN  -- (currval is defined once this session inserted a delta)
           IF currval(pg_get_serial_sequence('arbor_term_delta', 'id')) %% 4096 < added THEN
             PERFORM arbor_term_fold();
           END IF;
         END IF;
         RETURN NULL;
       END $$""",
    """CREATE FUNCTION arbor_term_reset() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         DELETE FROM arbor_term_delta;
         DELETE FROM arbor_term_df;
         RETURN NULL;
       END $$""",
    """CREATE TRIGGER arbor_term_count_ins AFTER INSERT ON arbor_message
       REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()""",
    """CREATE TRIGGER arbor_term_count_del AFTER DELETE ON arbor_message
       REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()""",
    """CREATE TRIGGER arbor_term_count_upd AFTER UPDATE ON arbor_message
       REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
       FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()""",
    # A test flush truncates the messages: their counts go with them.
    """CREATE TRIGGER arbor_term_count_trunc AFTER TRUNCATE ON arbor_message
       FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_reset()""",
]
POSTGRES_BACKWARD = [
    "DROP TRIGGER IF EXISTS arbor_term_count_ins ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_del ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_upd ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_trunc ON arbor_message",
    "DROP FUNCTION IF EXISTS arbor_term_count()",
    "DROP FUNCTION IF EXISTS arbor_term_reset()",
    "DROP FUNCTION IF EXISTS arbor_term_fold()",
    "DROP TABLE IF EXISTS arbor_term_delta",
    "DROP TABLE IF EXISTS arbor_term_df",
]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0011_session_branched")]

    operations = [
        migrations.RunPython(
            per_vendor({"sqlite": SQLITE_FORWARD, "postgresql": POSTGRES_FORWARD}),
            per_vendor({"sqlite": SQLITE_BACKWARD, "postgresql": POSTGRES_BACKWARD}),
        )
    ]
