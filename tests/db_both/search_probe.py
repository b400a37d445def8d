"""Load a fixed corpus into a throwaway database, run fixed queries, print the answers as JSON.

    DATABASE_URL=postgres://... python -m tests.db_both.search_probe

One pytest run uses one database, so `test_search_parity.py` runs this module once per
database in a subprocess and compares the printed answers. The probe creates its own
uniquely named test database (a temp file on SQLite), writes the corpus through the
engine (SessionManager/Session, as agents do), searches at session and agent scope, and
destroys the database whatever happens. Nothing here depends on pytest.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import uuid
from typing import Any

# Stable message ids, so answers can be compared across databases (session ids cannot).
# Each id names what the message is for; tests assert behaviour through these names.
CORPUS: dict[str, list[dict[str, Any]]] = {
    "deploy-planning": [
        {"id": "dp-ask-day", "role": "user",
         "content": "When should we deploy the new billing service to production?"},
        {"id": "dp-decision-day", "role": "assistant",
         "content": "We decided the deployment day is Thursday, after the database "
                    "migration finishes and the billing team signs off."},
        {"id": "dp-failed", "role": "user",
         "content": "Last time it failed because the migration held a lock on the orders "
                    "table for twenty minutes."},
        {"id": "dp-deployed-hotfix", "role": "assistant",
         "content": "I deployed a hotfix that retries the lock."},
        {"id": "dp-deploying-note", "role": "user",
         "content": "Deploying on a Friday is forbidden by the release policy."},
        {"id": "dp-billing-migration", "role": "assistant",
         "content": "The billing migration is scripted, reviewed, and tested against a copy of "
                    "last week's snapshot; it adds two columns and backfills them in batches of "
                    "ten thousand rows so that no single statement holds a lock for long, and "
                    "the rollback script drops the columns again if anything looks wrong."},
        {"id": "dp-migration-only", "role": "user",
         "content": "Migration, migration, migration: every migration needs a rollback plan."},
        {"id": "dp-billing-only", "role": "user", "content": "Billing invoices go out monthly."},
    ],
    "health-checks": [
        {"id": "hc-ask", "role": "user",
         "content": "Can you check whether the api gateway in eu-west is healthy?"},
        {"id": "hc-call", "role": "assistant", "parts": [
            {"type": "text", "text": "Running the probe now."},
            {"type": "tool-call", "toolCallId": "call_hc_1", "toolName": "health_check",
             "input": {"service": "api-gateway", "region": "eu-west"}},
        ]},
        {"id": "hc-result", "role": "tool", "parts": [
            {"type": "tool-result", "toolCallId": "call_hc_1",
             "output": {"summary": "host gw-eu-3.internal answered 200 OK in 42 ms"}},
        ]},
        {"id": "hc-answer", "role": "assistant",
         "content": "The gateway answered quickly, in 42 milliseconds."},
        {"id": "hc-k8s", "role": "user",
         "content": "Our kubernetes cluster was upgraded over the weekend."},
        {"id": "hc-deploys", "role": "assistant",
         "content": "Nobody deploys to that cluster without a change ticket."},
    ],
    "multilingual": [
        {"id": "ml-zh", "role": "user", "content": "我们明天在北京开会讨论部署计划。"},
        {"id": "ml-ja", "role": "assistant", "content": "東京のデータセンターでサーバーを再起動しました。"},
        {"id": "ml-th", "role": "user", "content": "เซิร์ฟเวอร์ล่มเมื่อคืนนี้"},
        {"id": "ml-mixed", "role": "assistant",
         "content": "The deployment plan for 北京 is ready; the 東京 servers follow next week."},
    ],
    "edits-and-deletes": [
        {"id": "ed-meeting", "role": "user", "content": "The planning meeting is on Monday morning."},
        {"id": "ed-secret", "role": "user",
         "content": "The emergency rollback password is swordfish."},
        {"id": "ed-after", "role": "assistant", "content": "Noted; I will remember the meeting."},
    ],
    # A corrected fact and repeated boilerplate (issue 17): the re-ranking must agree too.
    "corrections": [
        {"id": "cr-rent-old", "role": "user", "content": "Rent for the flat is 1650 a month."},
        {"id": "cr-echo-1", "role": "assistant", "content": "Noted your flat details."},
        {"id": "cr-echo-2", "role": "assistant", "content": "Noted your flat  details."},
        {"id": "cr-echo-3", "role": "assistant", "content": "Noted your flat details."},
        {"id": "cr-rent-new", "role": "user",
         "content": "Actually the rent went up to 1740 in April."},
    ],
}
# The meeting message is edited (upsert with the same id), the secret deleted.
UPSERTED = {"id": "ed-meeting", "role": "user",
            "content": "The planning meeting moved to Wednesday afternoon."}
DELETED = ["ed-secret"]

# Another agent holding the same words: none of it may ever appear in the first's results.
OTHER_AGENT: dict[str, list[dict[str, Any]]] = {
    "intruder": [
        {"id": "other-deploy", "role": "user",
         "content": "We deploy the billing migration on Thursday; deployment day is fixed."},
        {"id": "other-health", "role": "assistant",
         "content": "The health check hit host gw-eu-3 and the kubernetes cluster."},
        {"id": "other-zh", "role": "user", "content": "北京的服务器和東京のサーバー"},
        {"id": "other-meeting", "role": "user",
         "content": "Monday meeting, Wednesday afternoon, rollback swordfish."},
    ],
}

QUERIES: dict[str, str] = {
    "nl_deploy_day": "what did we decide about the deployment day?",
    "nl_health_host": "which host did the health check hit?",
    "word_deploy": "deploy",
    "stem_deployed": "deployed",
    "stem_deployments": "Deployments",
    "all_vs_some": "billing migration",
    "rare_vs_common": "deploy kubernetes",
    "deleted_words": "rollback swordfish",
    "edited_old_word": "Monday",
    "edited_new_words": "wednesday afternoon",
    "cjk_zh": "北京",
    "cjk_ja": "東京のサーバー",
    "thai": "เซิร์ฟเวอร์",
    "syntax_quotes_or": '"deploy" OR "migration"',
    "syntax_star_near": "deploy* -migration NEAR(lock, 2)",
    "syntax_column_brackets": "host:gw-eu-3 AND (health OR check)",
    "syntax_unbalanced": "what's the host's status?! ((( [unbalanced \"",
    "syntax_emoji": '🚀 deploy 🔥 NEAR/3 "health',
    "syntax_operators_only": "AND OR NOT",
    "empty_whitespace": "  \t\n ",
    "rent_now": "what's the rent for the flat now?",
    "flat_details": "flat details",
}
# The same words without the syntax: each syntax query must answer exactly like these.
SYNTAX_WORDS: dict[str, str] = {
    "syntax_quotes_or": "deploy or migration",
    "syntax_star_near": "deploy migration NEAR lock 2",
    "syntax_column_brackets": "host gw eu 3 and health or check",
    "syntax_unbalanced": "what the host status unbalanced",
    "syntax_emoji": "deploy NEAR 3 health",
    "syntax_operators_only": "and or not",
}
SESSION_LIMIT = 10
AGENT_LIMIT = 20


def _hits(hits: list[Any], names: dict[str, str]) -> list[dict[str, Any]]:
    return [
        {"id": h.id, "session": names.get(h.session_id, "?" + h.session_id), "role": h.role,
         "rank": h.rank, "score": h.score, "created_at": h.created_at.isoformat(),
         "snippet": h.snippet, "superseded_by": h.superseded_by, "copies": h.copies,
         "matched": h.matched}
        for h in hits
    ]


def _load(manager: Any, corpus: dict[str, list[dict[str, Any]]]) -> dict[str, str]:
    """Sessions by name -> id; messages appended one by one (auto-parented)."""
    ids: dict[str, str] = {}
    for name, messages in corpus.items():
        session = manager.get_session(manager.create(name).id)
        ids[name] = session.id
        for message in messages:
            session.append_message(message)
    return ids


def _run_queries(main: Any, other: Any, sessions: dict[str, str], names: dict[str, str],
                 hybrid: Any) -> dict[str, Any]:
    queries = dict(QUERIES)
    queries.update({f"{name}__words": words for name, words in SYNTAX_WORDS.items()})
    out: dict[str, Any] = {}
    for key, query in queries.items():
        out[key] = {
            "query": query,
            "agent": _hits(main.search(query, limit=AGENT_LIMIT), names),
            # words and meaning (tests/semantic/fake.py's embedder), fused and re-ranked
            "hybrid": _hits(hybrid.search(query, limit=AGENT_LIMIT), names),
            "sessions": {
                name: _hits(main.get_session(sid).search(query, limit=SESSION_LIMIT), names)
                for name, sid in sessions.items()
            },
            "other_agent": _hits(other.search(query, limit=AGENT_LIMIT), names),
        }
    return out


def probe() -> dict[str, Any]:
    """Build the corpus in the current (test) database and answer every query."""
    from django.contrib.auth.models import User
    from django.db import connection

    from memory_core import SessionManager
    from sessions_app.models import Agent

    owner = User.objects.create(username="probe-owner")
    intruder = User.objects.create(username="probe-intruder")
    main = SessionManager.for_agent(Agent.objects.create(owner=owner, name="ops"))
    other = SessionManager.for_agent(Agent.objects.create(owner=intruder, name="other"))

    sessions = _load(main, CORPUS)
    other_sessions = _load(other, OTHER_AGENT)
    edits = main.get_session(sessions["edits-and-deletes"])
    edits.upsert_message(UPSERTED)
    edits.delete_messages(DELETED)

    names = {sid: name for name, sid in {**sessions, **other_sessions}.items()}
    from sessions_app.semantic.embed import embed_all
    from tests.semantic.fake import FakeEmbedder

    embedder = FakeEmbedder()
    embed_all(embedder)
    hybrid = SessionManager(main.agent_id, main.storage)
    hybrid.config.embedder = lambda: embedder
    return {
        "vendor": connection.vendor,
        "queries": _run_queries(main, other, sessions, names, hybrid),
    }


def _test_name(vendor: str, workdir: str) -> str:
    if vendor == "sqlite":
        return os.path.join(workdir, "probe.sqlite3")
    return f"arbor_probe_{uuid.uuid4().hex[:16]}"


def main() -> int:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arbor.settings")
    import django

    django.setup()
    from django.db import connection

    workdir = tempfile.mkdtemp(prefix="arbor-probe-")
    connection.settings_dict["TEST"] = {
        **connection.settings_dict.get("TEST", {}),
        "NAME": _test_name(connection.vendor, workdir),
    }
    old_name = connection.settings_dict["NAME"]
    created = False
    try:
        connection.creation.create_test_db(
            verbosity=0, autoclobber=True, serialize=False, keepdb=False
        )
        created = True
        result = probe()
    finally:
        if created:
            connection.creation.destroy_test_db(old_name, verbosity=0, keepdb=False)
        shutil.rmtree(workdir, ignore_errors=True)
    # The answer is the last line of stdout, whatever else was printed before it.
    sys.stdout.write("\n" + json.dumps(result, ensure_ascii=False, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
