"""Storage that grows with the data, not with the writes (issue 27).

Postgres' term statistics become counters updated in place: `arbor_term_df` holds a
row per (term, slot) and a write adds its counts to its slot's rows. Each writing
transaction takes a free slot (a transaction-scoped advisory lock, one of SLOTS, tried
in turn), so concurrent writers never wait for each other's rows, and no delta rows pile
up: the table holds the vocabulary (common words once per slot in use), and its updates
are HOT (the counter is not indexed; fillfactor leaves room on each page). A term's
document frequency is the sum of its slots' rows: at most SLOTS index entries per term,
whatever was written. Replaces 0002's insert-only deltas (`arbor_term_delta`), which
grew by one row per distinct word per write until a fold, faster than autovacuum
reclaimed them.

Sessions: the (agent, -updated_at) index goes. Every write moves updated_at, so with it
every append wrote a new version of the session row and an entry in each of its eight
indexes; without it the counters' updates are HOT on Postgres (fillfactor 50 leaves
the room) and touch one index fewer on SQLite. An agent's session list sorts its sessions
(found by agent_id) instead.

The message index (GIN) keeps a pending list of at most PENDING_KB: every search reads
all of it, whatever scope it searches.
"""

from django.db import migrations

from sessions_app.migrations._vendor import per_vendor

SLOTS = 16
# The message index's pending list (kB): new entries wait there, unsorted, until it is
# merged into the index, and every search reads all of it whoever wrote them. At the
# default 4 MB a search read ~510 pages of other agents' recent writes (16 ms at 200,000
# messages, an agent-wide search twice); at 256 kB, at most 32.
PENDING_KB = 256


def _lexemes(vectors: str, sign: str = "") -> str:
    # The lexemes of some vectors, once per vector; scope tokens ('§…') left out.
    return (f"SELECT lexeme AS term, {sign}1 AS n FROM {vectors}, "
            "unnest(tsvector_to_array(v)) AS lexeme WHERE lexeme NOT LIKE '§%%'")


def _totals(rows: str, sign: str = "") -> str:
    # The row count and the token total (two scope tokens a row, as FTS5 counts them).
    return (f"SELECT '§n', {sign}count(*) FROM {rows} "
            f"UNION ALL SELECT '§t', {sign}coalesce(sum(search_len + 2), 0) FROM {rows}")


def _add(counts: str) -> str:
    """Add `counts` (term, n) to this transaction's slot, in term order (so two writers
    sharing a slot, once every slot is taken, lock its rows in the same order)."""
    return f"""
           INSERT INTO arbor_term_df AS t (term, slot, df)
           SELECT term, arbor_term_slot(), sum(n) FROM ({counts}) c(term, n)
           GROUP BY term HAVING sum(n) <> 0 ORDER BY term
           ON CONFLICT (term, slot) DO UPDATE SET df = t.df + excluded.df;"""


POSTGRES_FORWARD = [
    "DROP TRIGGER IF EXISTS arbor_term_count_ins ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_del ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_upd ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_trunc ON arbor_message",
    "DROP FUNCTION IF EXISTS arbor_term_count()",
    "DROP FUNCTION IF EXISTS arbor_term_fold()",
    """CREATE TABLE arbor_term_counts (
         term text NOT NULL, slot smallint NOT NULL, df bigint NOT NULL,
         PRIMARY KEY (term, slot)) WITH (fillfactor = 70)""",
    """INSERT INTO arbor_term_counts (term, slot, df)
       SELECT term, 0, sum(n) FROM (SELECT term, df FROM arbor_term_df
                                    UNION ALL SELECT term, d FROM arbor_term_delta) x(term, n)
       GROUP BY term HAVING sum(n) <> 0""",
    "DROP TABLE arbor_term_delta",
    "DROP TABLE arbor_term_df",
    "ALTER TABLE arbor_term_counts RENAME TO arbor_term_df",
    "ALTER INDEX arbor_term_counts_pkey RENAME TO arbor_term_df_pkey",
    # This transaction's slot: the one it took, else the first free one, else (every
    # slot taken) the one its backend's number names, waited for.
    f"""CREATE FUNCTION arbor_term_slot() RETURNS smallint LANGUAGE plpgsql AS $$
       DECLARE
         taken text := current_setting('arbor.term_slot', true);
         s int := 0;
       BEGIN
         IF taken IS NOT NULL AND taken <> '' THEN
           RETURN taken::smallint;
         END IF;
         WHILE s < {SLOTS} AND NOT pg_try_advisory_xact_lock(72453381, s) LOOP
           s := s + 1;
         END LOOP;
         IF s = {SLOTS} THEN
           s := pg_backend_pid() %% {SLOTS};
           PERFORM pg_advisory_xact_lock(72453381, s);
         END IF;
         PERFORM set_config('arbor.term_slot', s::text, true);  -- until the transaction ends
         RETURN s;
       END $$""",
    """CREATE FUNCTION arbor_term_count() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
         IF TG_OP = 'INSERT' THEN""" + _add(
        _lexemes("(SELECT search_vector AS v FROM new_rows) r")
        + " UNION ALL " + _totals("new_rows")) + """
         ELSIF TG_OP = 'DELETE' THEN""" + _add(
        _lexemes("(SELECT search_vector AS v FROM old_rows) r", "-")
        + " UNION ALL " + _totals("old_rows", "-")) + """
         ELSIF EXISTS (SELECT 1 FROM old_rows o JOIN new_rows n ON n.seq = o.seq
                       WHERE n.search_vector <> o.search_vector
                          OR n.search_len <> o.search_len) THEN
           -- (most updates move parent pointers: nothing to count)""" + _add(
        "SELECT '§t', n.search_len - o.search_len FROM old_rows o JOIN new_rows n ON n.seq = o.seq"
        " UNION ALL " + _lexemes(
            "(SELECT n.search_vector AS v FROM old_rows o JOIN new_rows n ON n.seq = o.seq "
            "WHERE n.search_vector <> o.search_vector) c")
        + " UNION ALL " + _lexemes(
            "(SELECT o.search_vector AS v FROM old_rows o JOIN new_rows n ON n.seq = o.seq "
            "WHERE n.search_vector <> o.search_vector) c", "-")) + """
         END IF;
         RETURN NULL;
       END $$""",
    """CREATE OR REPLACE FUNCTION arbor_term_reset() RETURNS trigger LANGUAGE plpgsql AS $$
       BEGIN
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
    """CREATE TRIGGER arbor_term_count_trunc AFTER TRUNCATE ON arbor_message
       FOR EACH STATEMENT EXECUTE FUNCTION arbor_term_reset()""",
    "ALTER TABLE arbor_session SET (fillfactor = 50)",
    f"ALTER INDEX arbor_message_search SET (gin_pending_list_limit = {PENDING_KB})",
]

# Back to 0002's shape: every count folded into arbor_term_df, no pending delta.
POSTGRES_BACKWARD = [
    "ALTER TABLE arbor_session RESET (fillfactor)",
    "ALTER INDEX arbor_message_search RESET (gin_pending_list_limit)",
    "DROP TRIGGER IF EXISTS arbor_term_count_ins ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_del ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_upd ON arbor_message",
    "DROP TRIGGER IF EXISTS arbor_term_count_trunc ON arbor_message",
    "DROP FUNCTION IF EXISTS arbor_term_count()",
    "DROP FUNCTION IF EXISTS arbor_term_slot()",
    "DROP FUNCTION IF EXISTS arbor_term_reset()",
    "ALTER TABLE arbor_term_df RENAME TO arbor_term_counts",
    "CREATE TABLE arbor_term_df (term text PRIMARY KEY, df bigint NOT NULL)",
    """INSERT INTO arbor_term_df (term, df)
       SELECT term, sum(df) FROM arbor_term_counts GROUP BY term HAVING sum(df) <> 0""",
    "DROP TABLE arbor_term_counts",
    """CREATE TABLE arbor_term_delta (
         id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
         term text NOT NULL, d bigint NOT NULL)""",
    "CREATE INDEX arbor_term_delta_term ON arbor_term_delta (term) INCLUDE (d)",
]


def _backward_0002() -> list[str]:
    """0002's functions and triggers, as it made them."""
    import importlib

    m = importlib.import_module("sessions_app.migrations.0002_search")
    return [s for s in m.POSTGRES
            if s.lstrip().startswith(("CREATE FUNCTION", "CREATE TRIGGER"))]


class Migration(migrations.Migration):
    dependencies = [("sessions_app", "0004_message_vectors")]

    operations = [
        migrations.RunPython(
            per_vendor({"postgresql": POSTGRES_FORWARD}),
            per_vendor({"postgresql": POSTGRES_BACKWARD + _backward_0002()}),
        ),
        migrations.RemoveIndex(model_name="session", name="arbor_session_agent_upd"),
    ]
