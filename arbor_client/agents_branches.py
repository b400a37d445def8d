"""Branches for ArborSession, as `AdvancedSQLiteSession` names them, on Arbor's tree:
a branch is where the tree forks (the forks the UI's switcher shows), named by the SDK
in its first message's metadata or known by that message's id."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .agents_items import _is_user_turn

BRANCH_KEY = "branch_name"  # on the first message of a branch named by the SDK
MAIN = "main"
_EMPTY = ""  # the pin of a session whose own path is empty (its root was popped)


class BranchesMixin:
    """Listing, creating, switching and deleting branches (ArborSession supplies `_run`,
    `_store`, `_path`, `_leaf`, `_pin` and `_pending_branch`)."""

    _store: Any
    _pin: str | None
    _pending_branch: str | None

    async def _run(self, fn: Any) -> Any:  # pragma: no cover - ArborSession's
        raise NotImplementedError

    def _path(self) -> list[dict[str, Any]]:  # pragma: no cover - ArborSession's
        raise NotImplementedError

    def _leaf(self) -> str | None:  # pragma: no cover - ArborSession's
        raise NotImplementedError

    def _tree_branches(self) -> list[dict[str, Any]]:
        """One entry per leaf: its id, branch id (the first message where it splits off,
        or "main"), and the messages on its path."""
        every = self._store.paths()  # one request: the tree and each leaf's path
        rows = every["tree"]
        paths = {str(i["leaf_id"]): list(i["messages"]) for i in every["items"]}
        children: dict[str | None, list[str]] = {}
        for row in rows:
            children.setdefault(row.get("parent_id"), []).append(row["id"])
        parent = {row["id"]: row.get("parent_id") for row in rows}
        out = []
        for row in rows:
            if children.get(row["id"]):
                continue
            split, node = None, row["id"]
            while node is not None and split is None:
                siblings = children.get(parent[node], [])
                if siblings and siblings[0] != node:
                    split = node
                node = parent[node]
            out.append({"leaf": row["id"], "split": split})
        for entry in out:
            path = paths.get(entry["leaf"], [])
            entry["path"] = path
            name = None
            if entry["split"] is not None:
                first = next((m for m in path if m["id"] == entry["split"]), None)
                name = ((first or {}).get("metadata") or {}).get(BRANCH_KEY)
            entry["branch_id"] = name or entry["split"] or MAIN
        return out

    def _current_branch(self, branches: list[dict[str, Any]]) -> str | None:
        if self._pending_branch is not None:
            return self._pending_branch
        if self._pin == _EMPTY:
            return None
        # The tree's rows come in insertion order: its last leaf is the latest.
        leaf = self._pin or (branches[-1]["leaf"] if branches else None)
        for entry in branches:
            if any(m["id"] == leaf for m in entry["path"]) and entry["leaf"] == leaf:
                return str(entry["branch_id"])
        for entry in branches:
            if any(m["id"] == leaf for m in entry["path"]):
                return str(entry["branch_id"])
        return MAIN if not branches else None

    def _branch_path(self, branch_id: str | None) -> list[dict[str, Any]]:
        if branch_id is None or branch_id == self._pending_branch:
            return self._path()
        for entry in self._tree_branches():
            if entry["branch_id"] == branch_id:
                return list(entry["path"])
        raise ValueError(f"Branch '{branch_id}' does not exist")

    async def list_branches(self) -> list[dict[str, Any]]:
        """Every branch of the session's tree (the UI's branch switcher shows the same):
        `branch_id`, `message_count`, `user_turns`, `is_current`, `created_at`."""

        def branches() -> list[dict[str, Any]]:
            entries = self._tree_branches()
            current = self._current_branch(entries)
            out = []
            for entry in entries:
                path = entry["path"]
                start = next((m for m in path if m["id"] == entry["split"]), path[0] if path
                             else {})
                out.append({"branch_id": entry["branch_id"], "message_count": len(path),
                            "user_turns": sum(1 for m in path if _is_user_turn(m)),
                            "is_current": entry["branch_id"] == current,
                            "created_at": start.get("created_at"), "leaf_id": entry["leaf"]})
            if self._pending_branch is not None:
                path = self._path()
                out.append({"branch_id": self._pending_branch, "message_count": len(path),
                            "user_turns": sum(1 for m in path if _is_user_turn(m)),
                            "is_current": True, "created_at": _now(),
                            "leaf_id": self._leaf()})
            return out

        return await self._run(branches)

    async def create_branch_from_turn(self, turn_number: int,
                                      branch_name: str | None = None) -> str:
        """Branch before user turn `turn_number` of the session's branch and switch to it:
        the next items are stored beside that turn (a branch in Arbor's tree). Returns
        the branch id (`branch_name`, or one made from the turn and time)."""
        if branch_name is not None and not branch_name.strip():
            raise ValueError("Branch name cannot be empty")

        def create() -> str:
            path = self._path()
            turns = [i for i, m in enumerate(path) if _is_user_turn(m)]
            if not 1 <= turn_number <= len(turns):
                raise ValueError(f"Turn {turn_number} does not contain a user message")
            name = branch_name or f"branch_from_turn_{turn_number}_{int(_stamp())}"
            if name == MAIN or any(e["branch_id"] == name for e in self._tree_branches()):
                raise ValueError(f"Branch '{name}' already exists")
            at = turns[turn_number - 1]
            self._pin = path[at - 1]["id"] if at > 0 else _EMPTY
            self._pending_branch = name
            return name

        return await self._run(create)

    async def switch_to_branch(self, branch_id: str) -> None:
        """Read and write that branch (from `list_branches`, or one the UI made)."""

        def switch() -> None:
            for entry in self._tree_branches():
                if entry["branch_id"] == branch_id:
                    self._pin, self._pending_branch = entry["leaf"], None
                    return
            if branch_id == MAIN:  # an empty session
                self._pin, self._pending_branch = None, None
                return
            raise ValueError(f"Branch '{branch_id}' does not exist")

        await self._run(switch)

    async def delete_branch(self, branch_id: str, force: bool = False) -> None:
        """Delete the branch's own messages (from where it splits off, with any branch
        that splits from them). "main" cannot be deleted; the current branch only with
        force=True, which moves the session to main."""
        if not branch_id or not branch_id.strip():
            raise ValueError("Branch ID cannot be empty")
        if branch_id == MAIN:
            raise ValueError("Cannot delete the 'main' branch")

        def delete() -> None:
            entries = self._tree_branches()
            entry = next((e for e in entries if e["branch_id"] == branch_id), None)
            if entry is None:
                if branch_id == self._pending_branch:  # nothing stored yet
                    self._pending_branch, self._pin = None, None
                    return
                raise ValueError(f"Branch '{branch_id}' does not exist")
            if self._current_branch(entries) == branch_id:
                if not force:
                    raise ValueError(f"Cannot delete current branch '{branch_id}'. Use "
                                     "force=True or switch branches first")
                self._pin, self._pending_branch = None, None
            rows = self._store.tree()
            doomed, frontier = set(), [entry["split"]]
            while frontier:
                node = frontier.pop()
                doomed.add(node)
                frontier += [r["id"] for r in rows if r.get("parent_id") == node]
            for message_id in sorted(doomed, key=lambda i: -_depth(rows, i)):
                self._store.delete(message_id)
            if self._pin is None:
                main = next((e for e in self._tree_branches() if e["branch_id"] == MAIN), None)
                self._pin = main["leaf"] if main else None

        await self._run(delete)


def _depth(rows: list[dict[str, Any]], node: str) -> int:
    parent = {r["id"]: r.get("parent_id") for r in rows}
    depth = 0
    while parent.get(node) is not None:
        node, depth = parent[node], depth + 1
    return depth


def _now() -> str:
    return datetime.now(UTC).isoformat()


def _stamp() -> float:
    return datetime.now(UTC).timestamp()
