"""What `AdvancedSQLiteSession` adds to a session, on Arbor's tree: branches (forks in
the session's tree, the ones the UI's switcher shows), per-turn usage, turn queries with
Arbor's search, and the SDK's compaction hook served by Arbor's compaction."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from .agents_items import _is_user_turn, _message_items, _message_text
from .client import ArborAPIError

BRANCH_KEY = "branch_name"  # on the first message of a branch named by the SDK
MAIN = "main"
_EMPTY = ""  # the pin of a session whose own path is empty (its root was popped)


class AdvancedSessionMixin:
    """Branches, usage, turns and compaction for ArborSession (which supplies `_run`,
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

    # ------------------------------------------------------------ branches
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

    async def create_branch_from_content(self, search_term: str,
                                         branch_name: str | None = None) -> str:
        matches = await self.find_turns_by_content(search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matches[0]["turn"], branch_name)

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

    # --------------------------------------------------------------- turns
    async def get_conversation_turns(self, branch_id: str | None = None
                                     ) -> list[dict[str, Any]]:
        """The user turns of a branch (the session's own when None): `turn`, `content`
        (first 100 characters), `full_content`, `timestamp`, `can_branch`."""
        return _turns(await self._run(lambda: self._branch_path(branch_id)))

    async def find_turns_by_content(self, search_term: str, branch_id: str | None = None
                                    ) -> list[dict[str, Any]]:
        """The user turns that Arbor's search finds for `search_term` (words, stemmed,
        ranked) or that contain it literally, in turn order."""

        def find() -> tuple[list[dict[str, Any]], set[str]]:
            path = self._branch_path(branch_id)
            try:
                hits = {str(h["id"]) for h in self._store.search(search_term, 50)}
            except ArborAPIError:
                hits = set()
            return path, hits

        path, hits = await self._run(find)
        needle = search_term.casefold()
        turns = _turns(path)
        return [t for t in turns
                if t["message_id"] in hits or needle in t["full_content"].casefold()]

    async def get_conversation_by_turns(self, branch_id: str | None = None
                                        ) -> dict[int, list[dict[str, str | None]]]:
        """The branch's items grouped by user turn: {turn: [{type, tool_name}]}."""
        path = await self._run(lambda: self._branch_path(branch_id))
        return {turn: [{"type": _item_type(i), "tool_name": _tool_of(i)} for i in items]
                for turn, items in _items_by_turn(path).items()}

    async def get_tool_usage(self, branch_id: str | None = None) -> list[tuple[str, int, int]]:
        """(tool name, calls, turn) for the tool calls of a branch, by turn."""
        path = await self._run(lambda: self._branch_path(branch_id))
        out = []
        for turn, items in _items_by_turn(path).items():
            counts: dict[str, int] = {}
            for item in items:
                if str(item.get("type", "")).endswith("_call") and _tool_of(item):
                    counts[str(_tool_of(item))] = counts.get(str(_tool_of(item)), 0) + 1
            out += [(name, n, turn) for name, n in counts.items()]
        return out

    # --------------------------------------------------------------- usage
    async def store_run_usage(self, result: Any) -> None:
        """Keep a run's usage: added to the session's totals and, per turn, in the turn's
        last message (`metadata.turn_usage`, as Arbor's own chat turns do)."""
        usage = getattr(getattr(result, "context_wrapper", None), "usage", None)
        if usage is None:
            return
        record = {"requests": int(getattr(usage, "requests", 0) or 0),
                  "input_tokens": int(getattr(usage, "input_tokens", 0) or 0),
                  "output_tokens": int(getattr(usage, "output_tokens", 0) or 0),
                  "total_tokens": int(getattr(usage, "total_tokens", 0) or 0),
                  "input_tokens_details": _details(getattr(usage, "input_tokens_details", None)),
                  "output_tokens_details": _details(
                      getattr(usage, "output_tokens_details", None))}

        def store() -> None:
            self._store.add_usage(record["input_tokens"], record["output_tokens"])
            path = self._path()
            if not path:
                return
            last = path[-1]
            metadata = dict(last.get("metadata") or {})
            metadata["turn_usage"] = _add_usage(metadata.get("turn_usage"), record)
            self._store.update(last["id"], {"role": last["role"], "parts": last["parts"],
                                            "metadata": metadata})

        await self._run(store)

    async def get_turn_usage(self, user_turn_number: int | None = None,
                             branch_id: str | None = None) -> Any:
        """Usage by user turn on a branch: a list of all turns', or one turn's dict."""
        path = await self._run(lambda: self._branch_path(branch_id))
        by_turn = _usage_by_turn(path)
        if user_turn_number is not None:
            found = by_turn.get(user_turn_number)
            return {k: v for k, v in found.items() if k != "user_turn_number"} if found else {}
        return [by_turn[n] for n in sorted(by_turn)]

    async def get_session_usage(self, branch_id: str | None = None) -> dict[str, int] | None:
        """Total usage: `requests`, `input_tokens`, `output_tokens`, `total_tokens`,
        `total_turns`, of one branch or (None) the whole session. None when nothing ran."""

        def usage() -> dict[str, int] | None:
            if branch_id is not None:
                paths = [self._branch_path(branch_id)]
            else:
                paths = [e["path"] for e in self._tree_branches()]
            seen: set[str] = set()
            records = []
            for path in paths:
                for message in path:
                    turn_usage = (message.get("metadata") or {}).get("turn_usage")
                    if isinstance(turn_usage, dict) and message["id"] not in seen:
                        seen.add(message["id"])
                        records.append(turn_usage)
            if not records:
                return None
            total = {k: sum(int(r.get(k) or 0) for r in records)
                     for k in ("requests", "input_tokens", "output_tokens", "total_tokens")}
            if not total["total_tokens"]:
                total["total_tokens"] = total["input_tokens"] + total["output_tokens"]
            return {**total, "total_turns": len(records)}

        return await self._run(usage)

    # ---------------------------------------------------------- compaction
    async def run_compaction(self, args: dict[str, Any] | None = None) -> None:
        """The SDK's compaction hook, served by Arbor's compaction: older messages are
        summarised in an overlay (nothing is deleted; the UI can expand it), so
        `get_items` then returns the summary and the recent items.

        Called by hand (no args) or with `force`, it compacts now. The Runner's own call
        after each turn (force false) leaves it to Arbor, which compacts on its own
        threshold as items are appended."""
        if args is not None and not args.get("force"):
            return
        await self._run(self._store.compact)


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


def _turns(path: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in path:
        if _is_user_turn(message):
            text = _message_text(message)
            out.append({"turn": len(out) + 1, "content": text[:100], "full_content": text,
                        "timestamp": message.get("created_at"), "can_branch": True,
                        "message_id": message["id"]})
    return out


def _details(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if hasattr(value, "model_dump"):
        return dict(value.model_dump())
    return dict(value) if isinstance(value, dict) else None


def _add_usage(old: Any, new: dict[str, Any]) -> dict[str, Any]:
    if not isinstance(old, dict):
        return new
    out = dict(old)
    for key in ("requests", "input_tokens", "output_tokens", "total_tokens"):
        out[key] = int(old.get(key) or 0) + int(new.get(key) or 0)
    return out


def _usage_by_turn(path: list[dict[str, Any]]) -> dict[int, dict[str, Any]]:
    by_turn: dict[int, dict[str, Any]] = {}
    turn = 0
    for message in path:
        if _is_user_turn(message):
            turn += 1
        record = (message.get("metadata") or {}).get("turn_usage")
        if turn and isinstance(record, dict):
            merged = _add_usage(by_turn.get(turn), record)
            merged.setdefault("requests", 1)
            merged.setdefault("total_tokens", int(merged.get("input_tokens") or 0)
                              + int(merged.get("output_tokens") or 0))
            by_turn[turn] = {**merged, "user_turn_number": turn}
    return by_turn


def _item_type(item: dict[str, Any]) -> str:
    if item.get("role") in ("user", "assistant"):
        return str(item["role"])
    return str(item.get("type") or "other")


def _tool_of(item: dict[str, Any]) -> str | None:
    name = item.get("name") or item.get("server_label")
    return str(name) if name and str(item.get("type", "")).endswith(("_call", "_output")) else None


def _items_by_turn(path: list[dict[str, Any]]) -> dict[int, list[dict[str, Any]]]:
    """The path's items by user turn (items before the first user turn: turn 0)."""
    seen: set[str] = set()
    out: dict[int, list[dict[str, Any]]] = {}
    turn = 0
    for message in path:
        if _is_user_turn(message):
            turn += 1
        for item, _ in _message_items(message, seen):
            out.setdefault(turn, []).append(item)
    return out
