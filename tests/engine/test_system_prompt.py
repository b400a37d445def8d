"""The frozen system prompt: SPEC §16 format, stored bytes, refresh, status."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

from memory_core import SessionManager
from memory_core.prompt import percent

SEP = "═" * 46


@pytest.fixture
def demo_manager(agent):
    return (
        SessionManager.for_agent(agent)
        .with_context("soul", description="Identity", content="You are helpful.", kind="readonly")
        .with_context("memory", description="Learned facts", max_tokens=1100)
        .with_context("notes")
        .with_context("empty_ro", kind="readonly", content="")
        .with_context("skills", kind="skill", description="How-tos")
        .with_context("knowledge", kind="search", description="Reference")
    )


def test_prompt_format_is_exactly_spec_16(demo_manager):
    s = demo_manager.get_session(demo_manager.create("p").id)
    s.replace_context_block("memory", "x" * 1980)  # 495 tokens
    s.set_context_entry("skills", "deploy", "steps", "Ship a release")
    s.set_context_entry("skills", "plain", "steps")
    prompt = s.freeze_system_prompt()
    assert prompt == "\n\n".join([
        f"{SEP}\nSOUL (Identity) [readonly]\n{SEP}\nYou are helpful.",
        f"{SEP}\nMEMORY (Learned facts) [45% — 495/1100 tokens] [writable]\n{SEP}\n{'x' * 1980}",
        f"{SEP}\nNOTES [writable]\n{SEP}\n",
        f"{SEP}\nSKILLS (How-tos) [loadable]\n{SEP}\n- deploy: Ship a release\n- plain",
        f"{SEP}\nKNOWLEDGE (Reference) [searchable]\n{SEP}\n0 entries indexed.",
    ])


def test_percent_rounds_half_up():
    assert percent(1, 8) == 13  # 12.5
    assert percent(495, 1100) == 45
    assert percent(5, 200) == 3  # 2.5
    assert percent(0, 10) == 0


def test_read_only_block_with_budget_shows_usage(manager):
    s = manager.get_session(manager.create("p").id)
    s.add_context("rules", kind="readonly", content="abcd" * 10, max_tokens=20)
    assert s.refresh_system_prompt().splitlines()[1] == "RULES [50% — 10/20 tokens] [readonly]"


def test_agent_without_blocks_freezes_the_empty_prompt(manager):
    s = manager.get_session(manager.create("p").id)
    assert s.freeze_system_prompt() == ""
    assert s.system_prompt_status().frozen is True
    s.add_context("late", content="x")
    assert s.freeze_system_prompt() == ""


def test_writes_do_not_change_frozen_prompt_until_refresh(demo_manager):
    s = demo_manager.get_session(demo_manager.create("p").id)
    first = s.freeze_system_prompt()
    s.replace_context_block("memory", "new fact")
    s.add_context("todos", max_tokens=10)
    s.remove_context("notes")
    assert s.freeze_system_prompt() == first
    status = s.system_prompt_status()
    assert status.frozen and not status.up_to_date
    assert set(status.changed_blocks) == {"memory", "todos", "notes"}
    refreshed = s.refresh_system_prompt()
    assert "new fact" in refreshed and "TODOS" in refreshed and "NOTES" not in refreshed
    assert s.freeze_system_prompt() == refreshed
    assert s.system_prompt_status().up_to_date is True
    assert s.system_prompt_status().changed_blocks == []


def test_status_before_freezing(demo_manager):
    s = demo_manager.get_session(demo_manager.create("p").id)
    status = s.system_prompt_status()
    assert status.frozen is False and status.frozen_at is None


def _database_url() -> str:
    settings = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{Path(settings['NAME']).resolve()}"
    host, port = settings["HOST"] or "127.0.0.1", settings["PORT"] or 5432
    return f"postgres://{settings['USER']}@{host}:{port}/{settings['NAME']}"


@pytest.mark.django_db(transaction=True)
def test_frozen_prompt_is_byte_identical_in_another_process(agent):
    manager = SessionManager.for_agent(agent).with_context("memory", max_tokens=100)
    s = manager.get_session(manager.create("p").id)
    s.replace_context_block("memory", "Ünïcödé — facts ═")
    frozen = s.freeze_system_prompt()
    s.replace_context_block("memory", "changed after freezing")
    script = (
        "import django, json, sys; django.setup();"
        "from memory_core import SessionManager;"
        f"m = SessionManager.for_agent({agent.id!r}).with_context('memory', max_tokens=100);"
        f"sys.stdout.write(json.dumps(m.get_session({s.id!r}).freeze_system_prompt()))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arbor.settings", "DATABASE_URL": _database_url()}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env,
                         cwd=Path(__file__).resolve().parents[2], timeout=60, check=True)
    assert json.loads(out.stdout).encode() == frozen.encode()
