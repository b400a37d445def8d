"""Statement text shared by the storage modules and the benchmarks' baselines.

Written with `%s` placeholders and a literal % as `%%` (Django's style on both vendors);
the SQLite baseline converts them as Django does (benchmarks.baseline.qmark).
benchmarks/drift.py checks that the baselines run these statements.
"""

from __future__ import annotations

from ..models.fields import iso_text

# Messages name their session by its number (arbor_session.key, migration 0003); the
# statements take the session's id and look the number up (one primary-key probe).
SESSION_KEY = "(SELECT key FROM arbor_session WHERE id = %s)"


def parent_id_of(alias: str) -> str:
    """The parent's public id of the row `alias` (not stored twice: one key probe)."""
    return f"(SELECT p.message_id FROM arbor_message p WHERE p.seq = {alias}.parent_seq)"


# How many messages an agent holds (its sessions' counters; one index range).
AGENT_MESSAGES = "SELECT coalesce(sum(message_count), 0) FROM arbor_session WHERE agent_id = %s"

# A message's fields, from `FROM arbor_message` (no alias).
MESSAGE_COLUMNS = f"message_id, {parent_id_of('arbor_message')}, role, parts, metadata, created_at"
# How far up a tool result looks for its call (split form: call, then results).
TOOL_CALL_DEPTH = 16

LATEST_LEAF = f"""
    SELECT m.seq FROM arbor_message m
    WHERE m.session_key = {SESSION_KEY}
      AND NOT EXISTS (SELECT 1 FROM arbor_message c WHERE c.parent_seq = m.seq)
    ORDER BY m.seq DESC LIMIT 1"""
LEAF = f"SELECT seq, message_id FROM arbor_message WHERE seq = ({LATEST_LEAF})"
LATEST_MESSAGE = f"SELECT {MESSAGE_COLUMNS} FROM arbor_message WHERE seq = ({LATEST_LEAF})"

# Postgres locks the session row before a write decides anything (SQLite's IMMEDIATE
# transaction already holds the database's write lock).
LOCK_SESSION = "SELECT agent_id FROM arbor_session WHERE id = %s FOR UPDATE"
# Counters and updated_at move only once a write has changed something.
COUNT = ("UPDATE arbor_session SET updated_at = %s, message_count = message_count + %s, "
         "search_tokens = search_tokens + %s WHERE id = %s RETURNING agent_id")
ZERO_COUNTS = ("UPDATE arbor_session SET updated_at = %s, message_count = 0, search_tokens = 0, "
               "branched = FALSE WHERE id = %s")
# Before a message goes under an explicit parent, or in as a new root: the session is
# branched from now on if that parent already has a child (or the session a root). The
# row count is the answer the append's events need: the new message starts a branch (1)
# or is its parent's first child (0). (The session row is written in this transaction
# anyway: its event counter.)
MARK_BRANCH_UNDER = ("UPDATE arbor_session SET branched = TRUE WHERE id = %s "
                     "AND EXISTS (SELECT 1 FROM arbor_message WHERE parent_seq = %s)")
MARK_BRANCH_ROOT = ("UPDATE arbor_session SET branched = TRUE WHERE id = %s "
                    f"AND EXISTS (SELECT 1 FROM arbor_message WHERE session_key = {SESSION_KEY})")
# After a bulk insert (fork, import): whatever shape arrived. Grouped by an expression
# (roots as 0: no seq is 0) so Postgres reads the session's rows by their index: grouped
# by the bare column it walked the whole parent_seq index in order, 110 ms per import of
# a conversation into a 20,000-message table instead of 1 ms.
MARK_BRANCHED = """UPDATE arbor_session SET branched = EXISTS (
                       SELECT 1 FROM arbor_message m WHERE m.session_key = arbor_session.key
                       GROUP BY coalesce(m.parent_seq, 0) HAVING count(*) > 1)
                   WHERE id = %s"""

INSERT_COLUMNS = ("session_key, message_id, parent_seq, role, parts, metadata, search_len, "
                  "created_at, search_extra")
_VALUES = f"{SESSION_KEY}, %s, %s, %s, %s, %s, %s, %s, %s"
INSERT_MESSAGE = f"INSERT INTO arbor_message ({INSERT_COLUMNS}) VALUES ({_VALUES}) RETURNING seq"
INSERT_MESSAGE_WITH_VECTOR = (f"INSERT INTO arbor_message ({INSERT_COLUMNS}, search_vector) "
                              f"VALUES ({_VALUES}, %s::tsvector) RETURNING seq")
# Bulk inserts (fork, import) give each parent by its id (the session's id, then the
# parent's) where a single insert gives its seq: parents come first, so it is in by then.
_PARENT_BY_ID = ("(SELECT seq FROM arbor_message "
                 f"WHERE session_key = {SESSION_KEY} AND message_id = %s)")
_LINKED_VALUES = f"{SESSION_KEY}, %s, {_PARENT_BY_ID}, %s, %s, %s, %s, %s, %s"
INSERT_LINKED = f"INSERT INTO arbor_message ({INSERT_COLUMNS}) VALUES ({_LINKED_VALUES})"
INSERT_LINKED_WITH_VECTOR = (f"INSERT INTO arbor_message ({INSERT_COLUMNS}, search_vector) "
                             f"VALUES ({_LINKED_VALUES}, %s::tsvector)")
# Postgres: a whole tree at once (vendors/postgres.py _insert_at_once), its seqs taken beforehand.
INSERT_UNNESTED = (
    f"INSERT INTO arbor_message (seq, {INSERT_COLUMNS}, search_vector) "
    f"SELECT u.seq, {SESSION_KEY}, u.message_id, u.parent_seq, u.role, u.parts, u.metadata, "
    "u.search_len, u.created_at, u.search_extra, u.search_vector::tsvector "
    "FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::text[], %s::text[], %s::text[], "
    "%s::int[], %s::timestamptz[], %s::text[], %s::text[]) AS u(seq, message_id, parent_seq, "
    "role, parts, metadata, search_len, created_at, search_extra, search_vector) "
    "ORDER BY u.seq")
# Postgres: the row, its search vector and the session's counters in one statement.
INSERT_COUNTED = (
    "WITH counted AS (UPDATE arbor_session SET updated_at = %s, "
    "message_count = message_count + 1, search_tokens = search_tokens + %s WHERE id = %s) "
    + INSERT_MESSAGE_WITH_VECTOR)
# SQLite: an index row's rowid is its agent's number (arbor_search_key, migration 0002)
# shifted left by FTS_SHIFT, or'ed with the message's seq: an agent's rows are one range.
FTS_SHIFT = 36
FTS_SEQ = (1 << FTS_SHIFT) - 1  # rowid & FTS_SEQ = seq
AGENT_FTS_KEY = "(SELECT key FROM arbor_search_key WHERE agent_id = %s)"
SESSION_FTS_KEY = ("(SELECT k.key FROM arbor_session s JOIN arbor_search_key k "
                   "ON k.agent_id = s.agent_id WHERE s.id = %s)")
INSERT_FTS = ("INSERT INTO arbor_message_fts(rowid, body, scope) "
              f"VALUES (({AGENT_FTS_KEY} << {FTS_SHIFT}) | %s, %s, %s)")
DELETE_MESSAGES = f"DELETE FROM arbor_message WHERE session_key = {SESSION_KEY}"
# The live-event outbox's rows up to a seq (events.py; it names sessions by number too).
PRUNE_EVENTS = f"DELETE FROM arbor_session_event WHERE session_key = {SESSION_KEY} AND seq <= %s"
DELETE_COMPACTIONS = "DELETE FROM arbor_compaction WHERE session_id = %s"
DELETE_SKILL_STATES = "DELETE FROM arbor_skill_state WHERE session_id = %s"


def find_messages(count: int) -> str:
    marks = ", ".join(["%s"] * count)
    return (f"SELECT seq, {MESSAGE_COLUMNS} FROM arbor_message "
            f"WHERE session_key = {SESSION_KEY} AND message_id IN ({marks})")


_PATH_COLUMNS = (f"m.message_id, {parent_id_of('m')}, m.role, m.parts, m.metadata, "
                 "m.created_at")


def _walk_up(anchor: str, bound: str = "") -> str:
    """`path(seq, parent_seq, depth)`: the anchor and its ancestors, following parent
    pointers (depth 0 is the anchor); `bound` limits the depth."""
    return f"""
    WITH RECURSIVE path(seq, parent_seq, depth) AS (
        SELECT seq, parent_seq, 0 FROM arbor_message WHERE {anchor}
        UNION ALL
        SELECT m.seq, m.parent_seq, p.depth + 1
        FROM path p JOIN arbor_message m ON m.seq = p.parent_seq{bound}
    )"""


def _path_sql(anchor: str) -> str:
    # Rows come back oldest first with their depth.
    return f"""{_walk_up(anchor)}
    SELECT {_PATH_COLUMNS}, p.depth
    FROM path p JOIN arbor_message m ON m.seq = p.seq
    ORDER BY p.depth DESC"""


ID_ANCHOR = f"session_key = {SESSION_KEY} AND message_id = %s"
LATEST_ANCHOR = f"seq = ({LATEST_LEAF})"
PATH_TO_ID = _path_sql(ID_ANCHOR)
PATH_TO_LATEST = _path_sql(LATEST_ANCHOR)

# created_at as ISO 8601 text on SQLite (stored as integer microseconds, turned into
# text in C: models/fields.py iso_text), parsed in C or served as it is.
CREATED_AT = {"sqlite": iso_text("m.created_at"), "postgresql": "m.created_at"}


def path_read(anchor: str, vendor: str) -> str:
    """The path from the anchor up to its root, oldest first, as (message_id, role,
    parts, metadata or NULL when '{}', created_at, seq, parent_seq): each parent
    id is the row before. An unbranched session's path is all its messages up to the
    anchor (one index range); a branched one walks parent pointers. Either way the
    caller checks the chain (session.branched is only a hint). Params: the anchor's,
    the session id twice."""
    cols = (f"m.message_id, m.role, m.parts, NULLIF(m.metadata, '{{}}'), {CREATED_AT[vendor]}, "
            "m.seq, m.parent_seq")
    return f"""
    WITH RECURSIVE anchor(seq) AS (SELECT seq FROM arbor_message WHERE {anchor}),
    shape(branched) AS (SELECT branched FROM arbor_session WHERE id = %s),
    path(seq, parent_seq) AS (
        SELECT seq, parent_seq FROM arbor_message
        WHERE seq = (SELECT seq FROM anchor) AND (SELECT branched FROM shape)
        UNION ALL
        SELECT m.seq, m.parent_seq FROM path p JOIN arbor_message m ON m.seq = p.parent_seq
    )
    SELECT {cols} FROM arbor_message m
    WHERE m.session_key = {SESSION_KEY} AND m.seq <= (SELECT seq FROM anchor)
      AND NOT (SELECT branched FROM shape)
    UNION ALL
    SELECT {cols} FROM path p JOIN arbor_message m ON m.seq = p.seq
    ORDER BY 6"""


READ_TO_ID = {v: path_read(ID_ANCHOR, v) for v in CREATED_AT}
READ_TO_LATEST = {v: path_read(LATEST_ANCHOR, v) for v in CREATED_AT}


def path_length(anchor: str) -> str:
    return f"""WITH RECURSIVE path(seq, parent_seq) AS (
                   SELECT seq, parent_seq FROM arbor_message WHERE {anchor}
                   UNION ALL
                   SELECT m.seq, m.parent_seq FROM path p
                   JOIN arbor_message m ON m.seq = p.parent_seq)
               SELECT count(*) FROM path"""


CALL_CONTEXT = f"""WITH RECURSIVE up(seq, parent_seq, depth) AS (
                    SELECT seq, parent_seq, 0 FROM arbor_message WHERE seq = %s
                    UNION ALL
                    SELECT m.seq, m.parent_seq, up.depth + 1
                    FROM up JOIN arbor_message m ON m.seq = up.parent_seq
                    WHERE up.depth < {TOOL_CALL_DEPTH})
                SELECT m.parts FROM up JOIN arbor_message m ON m.seq = up.seq"""

# Compaction overlays and unloaded skills of the session, read with every path.
_VIEW_ROWS = """SELECT 'c', overlay_id, summary, from_message_id, to_message_id, created_at, seq
               FROM arbor_compaction WHERE session_id = %s
               UNION ALL
               SELECT 's', label, key, NULL, NULL, unloaded_at, id
               FROM arbor_skill_state WHERE session_id = %s AND unloaded_at IS NOT NULL"""
VIEWS = _VIEW_ROWS + " ORDER BY 1, 6, 7"
# The same, after the session's stamp (path_cache.py): its counters, its largest message
# seq and updated_at, which every write to its messages moves. Params: the session id 4×.
STAMPED_VIEWS = f"""SELECT 'a', CAST(message_count AS text), CAST(search_tokens AS text),
               CAST((SELECT max(seq) FROM arbor_message WHERE session_key = {SESSION_KEY}) AS text),
               NULL,
               updated_at, 0
               FROM arbor_session WHERE id = %s
               UNION ALL
               {_VIEW_ROWS}
               ORDER BY 1, 6, 7"""
COMPACTIONS = ("SELECT overlay_id, summary, from_message_id, to_message_id, created_at "
               "FROM arbor_compaction WHERE session_id = %s ORDER BY created_at, seq")

# --- branch navigation (branches.py) -----------------------------------------------
ROOTS = (f"SELECT {MESSAGE_COLUMNS} FROM arbor_message "
         f"WHERE session_key = {SESSION_KEY} AND parent_seq IS NULL ORDER BY seq")
# Children come after their parents, so the subtree's last-inserted message is a leaf.
NEWEST_LEAF_UNDER = f"""
    WITH RECURSIVE sub(seq) AS (
        SELECT seq FROM arbor_message WHERE session_key = {SESSION_KEY} AND message_id = %s
        UNION ALL
        SELECT m.seq FROM sub JOIN arbor_message m ON m.parent_seq = sub.seq
    )
    SELECT {MESSAGE_COLUMNS} FROM arbor_message WHERE seq = (SELECT max(seq) FROM sub)"""


def path_page(anchor: str) -> str:
    """Up to depth %s (inclusive) from the anchor, walking parent pointers, oldest first;
    each row with its depth and its place among its siblings (the parent's children, or
    the session's roots): 1-based index, count, previous and next ids. Params: the
    anchor's, the depth bound, the session id (for the roots)."""
    return f"""{_walk_up(anchor, " WHERE p.depth < %s")},
    sib(seq, message_id, parent_seq) AS (
        SELECT s.seq, s.message_id, s.parent_seq FROM arbor_message s
        WHERE s.parent_seq IN (SELECT parent_seq FROM path)
        UNION ALL
        SELECT s.seq, s.message_id, s.parent_seq FROM arbor_message s
        WHERE s.session_key = {SESSION_KEY} AND s.parent_seq IS NULL
          AND EXISTS (SELECT 1 FROM path WHERE parent_seq IS NULL)
    ),
    ranked(seq, idx, cnt, prev_id, next_id) AS (
        SELECT seq, row_number() OVER w, count(*) OVER (PARTITION BY parent_seq),
               lag(message_id) OVER w, lead(message_id) OVER w
        FROM sib WINDOW w AS (PARTITION BY parent_seq ORDER BY seq)
    )
    SELECT {_PATH_COLUMNS}, p.depth, r.idx, r.cnt, r.prev_id, r.next_id
    FROM path p JOIN arbor_message m ON m.seq = p.seq JOIN ranked r ON r.seq = p.seq
    ORDER BY p.depth DESC"""


PAGE_TO_ID = path_page(ID_ANCHOR)
PAGE_TO_LATEST = path_page(LATEST_ANCHOR)


def on_path(anchor: str) -> str:
    """(the leaf's id, whether the message before_id is that leaf or one of its
    ancestors). In an unbranched session every earlier message is (session.branched is a
    hint: were it wrong, a page would be before_id's ancestors all the same); in a
    branched one, a walk up from the leaf that stops at before_id's seq, since parents
    come before their children. Params: the session id and before_id, the session id,
    then the anchor's."""
    return f"""
    WITH RECURSIVE b(seq) AS (
        SELECT seq FROM arbor_message WHERE {ID_ANCHOR}
    ),
    shape(branched) AS (SELECT branched FROM arbor_session WHERE id = %s),
    lf(seq, message_id) AS (SELECT seq, message_id FROM arbor_message WHERE {anchor}),
    up(seq, parent_seq) AS (
        SELECT seq, parent_seq FROM arbor_message
        WHERE seq = (SELECT seq FROM lf) AND (SELECT branched FROM shape)
        UNION ALL
        SELECT m.seq, m.parent_seq FROM up JOIN arbor_message m ON m.seq = up.parent_seq
        WHERE up.seq > (SELECT seq FROM b)
    )
    SELECT (SELECT message_id FROM lf),
           CASE WHEN (SELECT branched FROM shape)
                THEN EXISTS (SELECT 1 FROM up WHERE seq = (SELECT seq FROM b))
                ELSE (SELECT seq FROM b) <= (SELECT seq FROM lf) END"""


ON_PATH_TO_ID = on_path(ID_ANCHOR)
ON_PATH_TO_LATEST = on_path(LATEST_ANCHOR)
