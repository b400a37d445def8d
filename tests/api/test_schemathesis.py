"""Property-based run of schemathesis over the OpenAPI document, against a real server on
loopback: any 5xx, or a response that breaks the documented schema or content type, fails.

Bounded: a few examples per operation and mode, and a time budget after which the
remaining operations still run, with one example each.
"""

from __future__ import annotations

import re
import time
import warnings

import pytest
from hypothesis import HealthCheck, Phase, given, settings

schemathesis = pytest.importorskip("schemathesis")

from schemathesis import GenerationMode  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_schema_conformance,
)

from memory_core import SessionManager  # noqa: E402
from sessions_app import models  # noqa: E402
from sessions_app.auth import create_key  # noqa: E402
from tests.conftest import make_agent, user_msg  # noqa: E402

from .fake_llm import install  # noqa: E402

EXAMPLES = {GenerationMode.POSITIVE: 6, GenerationMode.NEGATIVE: 4}
BUDGET_SECONDS = 150
CHECKS = [not_a_server_error, response_schema_conformance, content_type_conformance]
TEMPLATES = [{"label": "notes", "max_tokens": 500}, {"label": "kb", "kind": "search"},
             {"label": "skills", "kind": "skill"}]


class World:
    """Real resources for generated requests to land on; rebuilt when a DELETE took them."""

    def __init__(self, user):
        self.user = user
        self.ids: dict[str, str] = {}

    def ensure(self) -> dict[str, str]:
        agent = models.Agent.objects.filter(id=self.ids.get("agent_id")).first()
        if agent is None:
            agent = models.Agent.objects.create(owner=self.user, name="fuzz", context=TEMPLATES)
            self.ids = {"agent_id": agent.id}
        if not models.Agent.objects.filter(id=agent.id, context=TEMPLATES).exists():
            agent.context = TEMPLATES  # a fuzzed PATCH replaced them
            agent.save(update_fields=["context"])
        manager = SessionManager.for_agent(agent)
        if manager.get(self.ids.get("session_id", "")) is None:
            sid = manager.create("fuzz").id
            session = manager.get_session(sid)
            first, second = session.append_messages([user_msg("deploy on Thursday"),
                                                     user_msg("or Friday")])
            overlay = session.add_compaction("plans", first.id, second.id)
            session.set_context_entry("kb", "k1", "tram 28")
            self.ids.update(session_id=sid, message_id=first.id, compaction_id=overlay.id)
        return {**self.ids, "label": "notes", "key": "k1", "name": "set_context"}


def _property(strategy, examples, body):
    @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def check(case):
        body(case)

    return check


@pytest.fixture
def world(transactional_db):
    agent = make_agent("fuzzer", "seed")
    world = World(agent.owner)
    world.key = create_key(agent.owner)[1]
    return world


def test_api_against_its_openapi_document(live_server, world, monkeypatch):
    install(monkeypatch)  # chat runs the scripted model in the live server's thread
    schema = schemathesis.openapi.from_url(f"{live_server.url}/api/v1/openapi.json")
    headers = {"Authorization": f"Bearer {world.key}"}
    deadline = time.monotonic() + BUDGET_SECONDS
    calls = 0
    succeeded: set[str] = set()

    def run_case(case, real_ids: bool) -> None:
        nonlocal calls
        if real_ids:
            ids = world.ensure()
            case.path_parameters = {k: ids.get(k, v) for k, v in
                                    (case.path_parameters or {}).items()}
        calls += 1
        response = case.call_and_validate(base_url=live_server.url, headers=headers,
                                          checks=CHECKS)
        if response.status_code < 300:
            succeeded.add(case.operation.label)

    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) > 40
    for operation in operations:
        uses_ids = bool(re.search(r"\{\w+\}", operation.path))
        for mode, examples in EXAMPLES.items():
            for real_ids in ((False, True) if uses_ids else (False,)):
                count = examples if time.monotonic() < deadline else 1
                check = _property(operation.as_strategy(generation_mode=mode), count,
                                  lambda case, real=real_ids: run_case(case, real))
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    check()
    assert calls >= len(operations)
    # Generated requests that land on real resources get through, not only errors.
    assert len(succeeded) >= len(operations) * 0.6, sorted(
        {o.label for o in operations} - succeeded)
