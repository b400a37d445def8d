"""What `AdvancedSQLiteSession` adds beyond branches, on Arbor: turn queries served by
Arbor's search, per-turn usage, and the SDK's compaction hook served by Arbor's
compaction."""

from __future__ import annotations

from typing import Any

from .agents_branches import BranchesMixin
from .agents_items import _is_user_turn, _message_items, _message_text
from .client import ArborAPIError


class TurnsMixin(BranchesMixin):
    """Turns, usage and compaction, read along a branch (the session's own by default)."""

    async def create_branch_from_content(self, search_term: str,
                                         branch_name: str | None = None) -> str:
        matches = await self.find_turns_by_content(search_term)
        if not matches:
            raise ValueError(f"No user turns found containing '{search_term}'")
        return await self.create_branch_from_turn(matches[0]["turn"], branch_name)

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
