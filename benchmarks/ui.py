"""The chat page: opening a 10,000-message session costs about what a 50-message one does.

The page renders the last page of the branch (the engine reads a bounded slice of the
path), so time to first byte of `/sessions/<id>/` should not grow with the session. Both
are fetched through Django's full request stack in process, logged in, alternating.
"""

from __future__ import annotations

from django.test import Client

from .cases import Bench, alternate
from .report import Result, Target

SHORT = 50


def chat_page(b: Bench) -> list[Result]:
    from sessions_app.models import Agent

    owner = Agent.objects.get(id=b.manager.agent_id).owner
    client = Client()
    client.force_login(owner)
    long_n = b.sizes.appends
    sessions = {}
    for n in (SHORT, long_n):
        sid = b.manager.create(f"page {n}").id
        session = b.manager.get_session(sid)
        messages = b.corpus.conversation(n)
        for start in range(0, n, 1000):
            session.append_messages(messages[start:start + 1000])
        sessions[n] = sid

    def fetch(n: int) -> None:
        response = client.get(f"/sessions/{sessions[n]}/")
        if response.status_code != 200:
            b.check(False, f"chat page answered {response.status_code}")

    long_s, short_s = alternate(lambda: fetch(long_n), lambda: fetch(SHORT), b.sizes.rounds * 3)
    return [Result("chat_page", f"chat page, {long_n:,}-msg session (vs {SHORT})",
                   long_s * 1e3, short_s * 1e3, "ms", Target(1.5))]
