"""The storage Protocol is the engine-storage contract: it declares every storage member
the engine uses and nothing else, and host settings (tool-output limit, skill files)
reach the engine through its config, not through the storage (issue 10)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from memory_core import NotFound, SessionManager
from memory_core.config import SessionConfig
from memory_core.storage import ContextStorage, SessionStorage
from sessions_app.storage import OrmStorage

ROOT = Path(__file__).resolve().parents[2] / "memory_core"
# Names the engine gives its storage object: `self.storage`, `session.storage`, `self.store`...
STORAGE_NAMES = ("storage", "store")


def declared() -> set[str]:
    names: set[str] = set()
    for protocol in (ContextStorage, SessionStorage):
        names |= {n for n in vars(protocol) if not n.startswith("_")}
    return names


def _names_storage(node: ast.expr) -> bool:
    if isinstance(node, ast.Name):
        return node.id in STORAGE_NAMES
    return isinstance(node, ast.Attribute) and node.attr in STORAGE_NAMES


def used_by_engine() -> set[str]:
    used: set[str] = set()
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Attribute) and _names_storage(node.value):
                used.add(node.attr)
    return used


def test_the_protocol_declares_exactly_what_the_engine_uses():
    assert used_by_engine() == declared()


def test_the_engine_never_reaches_into_storage_or_functions_with_getattr():
    for path in ROOT.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
                target = node.args[0]
                assert not _names_storage(target), f"{path.name}:{node.lineno}"
                assert getattr(target, "id", None) not in ("fn", "compact"), \
                    f"{path.name}:{node.lineno}"


def test_the_orm_storage_implements_every_declared_member():
    storage = OrmStorage()
    missing = {n for n in declared() if not callable(getattr(storage, n, None))}
    assert not missing


def test_each_storage_method_is_written_once_in_one_part():
    # OrmStorage is its parts (mixins), not a table forwarding names to them.
    own = {"release", "transaction"}  # the storage's own, not any kind of row's
    for name in declared():
        owners = [c.__name__ for c in OrmStorage.__mro__ if name in vars(c)]
        assert len(owners) == 1, f"{name}: {owners}"
        assert (owners == ["OrmStorage"]) == (name in own), f"{name}: {owners}"


def test_the_tool_output_limit_comes_from_the_config(manager):
    config = SessionConfig(max_tool_output_chars=1000)
    m = SessionManager.for_agent(manager.agent_id, config=config)
    session = m.get_session(m.create("limits").id)
    stored = session.append_message({"role": "tool", "parts": [
        {"type": "tool-result", "toolCallId": "x", "output": "q" * 5000}]})
    assert len(stored.parts[0]["output"]) <= 1000


def test_skill_files_come_from_the_configured_factory(manager):
    class Folder:
        def __init__(self, location: str) -> None:
            self.location = location

        def get(self) -> str:
            return f"- skills in {self.location}"

        def load(self, key: str) -> str | None:
            return f"{key} from {self.location}" if key == "deploy" else None

    m = SessionManager.for_agent(manager.agent_id, config=SessionConfig(file_skills=Folder))
    session = m.get_session(m.create("files").id)
    session.add_context("how", kind="skill", files="team")
    assert session.get_context_block("how").content == "- skills in team"
    assert session.load_skill("how", "deploy") == "deploy from team"
    with pytest.raises(NotFound):
        session.load_skill("how", "other")


def test_the_django_app_installs_settings_into_every_new_manager(manager, settings):
    settings.ARBOR_MAX_TOOL_OUTPUT_CHARS = 1234
    config = SessionManager.for_agent(manager.agent_id).config
    assert config.max_tool_output_chars == 1234
    assert config.file_skills is not None
