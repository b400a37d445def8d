"""Agent admin: block templates are checked by the engine's rules."""

from __future__ import annotations

import json

from tests.admin.conftest import change_url


def _post(admin_client, agent, context):
    return admin_client.post(change_url("agent", agent.pk), {
        "owner": agent.owner_id, "name": agent.name, "context": json.dumps(context)})


def test_bad_block_template_is_refused_and_nothing_changes(admin_client, agent):
    response = _post(admin_client, agent, [{"label": "memory", "max_tokens": -5}])
    assert response.status_code == 200
    assert "max_tokens must be a positive integer" in response.content.decode()
    agent.refresh_from_db()
    assert agent.context == []


def test_good_block_templates_are_saved(admin_client, agent):
    templates = [{"label": "memory", "kind": "writable", "max_tokens": 500}]
    response = _post(admin_client, agent, templates)
    assert response.status_code == 302
    agent.refresh_from_db()
    assert agent.context == templates
