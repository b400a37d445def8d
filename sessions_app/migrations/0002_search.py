"""Full-text search structures, by vendor (the ORM knows none of them).

SQLite: FTS5 tables. `arbor_message_fts` is contentless (it keeps tokens, row sizes and
rowids, no copy of the bodies); a row's rowid is its agent's number (`arbor_search_key`,
given by trigger to every agent) shifted left 36 bits, or-ed with the message's seq, so
an agent's rows are one rowid range. The engine inserts index rows as it appends; the
triggers remove or replace them on every delete and edit of a message (by the engine,
the admin or a cascade), rebuilding the old body through the SQL function
`arbor_search_body` that each connection registers. `arbor_entry_fts` indexes
searchable-knowledge entries, with their bodies.

Postgres: a `search_vector` tsvector and a GIN index on messages and entries, and the
corpus statistics BM25 needs: `arbor_term_df` (documents per term, plus `§n` rows and
`§t` total length), kept by statement triggers that write signed deltas to
`arbor_term_delta`, folded into `arbor_term_df` every 4,096 deltas by whoever gets the
advisory lock.
"""

from django.db import migrations

from ._vendor import per_vendor

_SCOPE = "'§s' || replace(s.id, '-', '') || ' §a' || replace(s.agent_id, '-', '')"
_REMOVE_OLD = f"""INSERT INTO arbor_message_fts(arbor_message_fts, rowid, body, scope)
              SELECT 'delete', d.id, arbor_search_body(old.parts, old.search_extra), {_SCOPE}
              FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
              JOIN arbor_message_fts_docsize d ON d.id = (k.key << 36) | old.seq
              WHERE s.key = old.session_key"""

SQLITE = [
    """CREATE TABLE arbor_search_key (
         key integer NOT NULL PRIMARY KEY AUTOINCREMENT,
         agent_id varchar(36) NOT NULL UNIQUE)""",
    """CREATE TRIGGER arbor_search_key_ai AFTER INSERT ON arbor_agent BEGIN
         INSERT OR IGNORE INTO arbor_search_key (agent_id) VALUES (new.id);
       END""",
    """CREATE VIRTUAL TABLE "arbor_message_fts" USING fts5(body, scope, tokenize='ascii',
       content='')""",
    f"""CREATE TRIGGER arbor_message_fts_ad AFTER DELETE ON arbor_message BEGIN
          {_REMOVE_OLD};
        END""",
    f"""CREATE TRIGGER arbor_message_fts_au AFTER UPDATE OF parts, search_extra ON arbor_message
        BEGIN
          {_REMOVE_OLD};
          INSERT INTO arbor_message_fts(rowid, body, scope)
          SELECT (k.key << 36) | new.seq, arbor_search_body(new.parts, new.search_extra), {_SCOPE}
          FROM arbor_session s JOIN arbor_search_key k ON k.agent_id = s.agent_id
          WHERE s.key = new.session_key;
        END""",
    "CREATE VIRTUAL TABLE arbor_entry_fts USING fts5(body, scope, tokenize='ascii')",
    """CREATE TRIGGER arbor_entry_fts_ad AFTER DELETE ON arbor_entry BEGIN
         DELETE FROM arbor_entry_fts WHERE rowid = old.seq;
       END""",
]
SQLITE_BACK = [
    "DROP TRIGGER IF EXISTS arbor_entry_fts_ad",
    "DROP TABLE IF EXISTS arbor_entry_fts",
    "DROP TRIGGER IF EXISTS arbor_message_fts_au",
    "DROP TRIGGER IF EXISTS arbor_message_fts_ad",
    "DROP TABLE IF EXISTS arbor_message_fts",
    "DROP TRIGGER IF EXISTS arbor_search_key_ai",
    "DROP TABLE IF EXISTS arbor_search_key",
]

# A statement's rows' lexemes (scope tokens, which begin with §, are not words), counted
# once per row.
_LEXEMES = ("SELECT lexeme, 1 AS n FROM (SELECT search_vector AS v FROM {rows}) r, "
            "unnest(tsvector_to_array(v)) AS lexeme WHERE lexeme NOT LIKE '§%%'")
_DOCS = ("SELECT '§n', count(*) FROM {rows} "
         "UNION ALL SELECT '§t', coalesce(sum(search_len + 2), 0) FROM {rows}")

POSTGRES = [
    "ALTER TABLE arbor_message ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector",
    "CREATE INDEX arbor_message_search ON arbor_message USING gin (search_vector)",
    "ALTER TABLE arbor_entry ADD COLUMN search_vector tsvector NOT NULL DEFAULT ''::tsvector",
    "CREATE INDEX arbor_entry_search ON arbor_entry USING gin (search_vector)",
    "CREATE TABLE arbor_term_df (term text PRIMARY KEY, df bigint NOT NULL)",
    """CREATE TABLE arbor_term_delta (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
       term text NOT NULL, d bigint NOT NULL)""",
    "CREATE INDEX arbor_term_delta_term ON arbor_term_delta (term) INCLUDE (d)",
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
    f"""CREATE FUNCTION arbor_term_count() RETURNS trigger LANGUAGE plpgsql AS $$
       DECLARE
         added bigint;
       BEGIN
         IF TG_OP = 'INSERT' THEN
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, count(*) FROM ({_LEXEMES.format(rows="new_rows")}) x GROUP BY lexeme
           UNION ALL SELECT term, n FROM ({_DOCS.format(rows="new_rows")}) t(term, n)
           WHERE n <> 0;
         ELSIF TG_OP = 'DELETE' THEN
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, -count(*) FROM ({_LEXEMES.format(rows="old_rows")}) x GROUP BY lexeme
           UNION ALL SELECT term, -n FROM ({_DOCS.format(rows="old_rows")}) t(term, n)
           WHERE n <> 0;
         ELSE
           INSERT INTO arbor_term_delta (term, d)
           SELECT '§t', sum(n.search_len) - sum(o.search_len)
           FROM old_rows o JOIN new_rows n ON n.seq = o.seq
           HAVING sum(n.search_len) <> sum(o.search_len);
           -- only rows whose vector changed (most updates move parent pointers)
           WITH changed AS (
             SELECT o.search_vector AS old_v, n.search_vector AS new_v
             FROM old_rows o JOIN new_rows n ON n.seq = o.seq
             WHERE n.search_vector <> o.search_vector)
           INSERT INTO arbor_term_delta (term, d)
           SELECT lexeme, sum(n) FROM (
             {_LEXEMES.format(rows="(SELECT new_v AS search_vector FROM changed) c")}
             UNION ALL
             SELECT lexeme, -1 AS n FROM (SELECT old_v AS v FROM changed) c,
               unnest(tsvector_to_array(v)) AS lexeme WHERE lexeme NOT LIKE '§%%') x
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
    "CREATE TRIGGER arbor_term_count_ins AFTER INSERT ON arbor_message "
    "REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()",
    "CREATE TRIGGER arbor_term_count_del AFTER DELETE ON arbor_message "
    "REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()",
    "CREATE TRIGGER arbor_term_count_upd AFTER UPDATE ON arbor_message "
    "REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows "
    "FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_count()",
    "CREATE TRIGGER arbor_term_count_trunc AFTER TRUNCATE ON arbor_message "
    "FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_reset()",
]
POSTGRES_BACK = [
    "DROP TRIGGER IF EXISTS arbor_term_count_trunc ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_upd ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_del ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_ins ON arbor_message",
    "DROP FUNCTION IF EXISTS arbor_term_reset()",
    "DROP FUNCTION IF EXISTS arbor_term_count()",
    "DROP FUNCTION IF EXISTS arbor_term_fold()",
    "DROP TABLE IF EXISTS arbor_term_delta",
    "DROP TABLE IF EXISTS arbor_term_df",
    "ALTER TABLE arbor_entry DROP COLUMN IF EXISTS search_vector",
    "ALTER TABLE arbor_message DROP COLUMN IF EXISTS search_vector",
]


class Migration(migrations.Migration):

    replaces = [
        ("sessions_app", "0002_search_index"),
        ("sessions_app", "0004_entry_search_index"),
        ("sessions_app", "0012_search_ranges"),
        ("sessions_app", "0013_drop_message_text"),
        ("sessions_app", "0014_contentless_search_index"),
    ]

    dependencies = [("sessions_app", "0001_initial")]

    operations = [
        migrations.RunPython(per_vendor({"sqlite": SQLITE, "postgresql": POSTGRES}),
                             per_vendor({"sqlite": SQLITE_BACK, "postgresql": POSTGRES_BACK})),
    ]
