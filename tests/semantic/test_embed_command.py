"""manage.py embed [--agent ID] [--wait], here against an OpenAI-compatible endpoint on
loopback (real HTTP)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from sessions_app.models import MessageVector
from tests.conftest import user_msg
from tests.semantic.fake import embeddings_server


@pytest.fixture
def endpoint(settings):
    with embeddings_server() as server:
        settings.ARBOR_EMBEDDINGS = "on"
        settings.ARBOR_EMBEDDINGS_URL = server.url
        settings.ARBOR_EMBEDDINGS_MODEL = "fake-http"
        settings.ARBOR_EMBEDDINGS_API_KEY = "sk-embed"
        yield server


def test_embed_wait_embeds_everything_pending(manager, other_manager, session, endpoint):
    for i in range(40):
        session.append_message(user_msg(f"message {i}"))
    other_manager.get_session(other_manager.create("x").id).append_message(user_msg("theirs"))
    out = StringIO()
    call_command("embed", "--wait", stdout=out)
    assert "embedded 41 messages with fake-http" in out.getvalue()
    assert out.getvalue().rstrip().endswith("0 waiting")
    assert MessageVector.objects.filter(model="fake-http").count() == 41
    assert {r["auth"] for r in endpoint.requests} == {"Bearer sk-embed"}


def test_embed_agent_embeds_only_that_agent(manager, other_manager, session, endpoint):
    session.append_message(user_msg("mine"))
    other_manager.get_session(other_manager.create("x").id).append_message(user_msg("theirs"))
    out = StringIO()
    call_command("embed", "--agent", manager.agent_id, stdout=out)
    assert MessageVector.objects.get().agent_id == manager.agent_id
    assert "embedded 1 messages" in out.getvalue()


def test_embed_refuses_unknown_agent_and_off(manager, settings, endpoint):
    with pytest.raises(CommandError, match="not found"):
        call_command("embed", "--agent", "nope", stdout=StringIO())
    settings.ARBOR_EMBEDDINGS = "off"
    with pytest.raises(CommandError, match="off"):
        call_command("embed", stdout=StringIO())


def test_embed_reports_a_failing_endpoint(session, endpoint):
    session.append_message(user_msg("one"))
    endpoint.status = 500
    with pytest.raises(CommandError, match="500"):
        call_command("embed", stdout=StringIO())
    assert MessageVector.objects.count() == 0
