"""The tree page's branch map: the session as a picture, above its outline.

A strip stands for the branch on screen, root at the left, its leaf at the right: a mark
at each branch point on it (how many branches), a shaded band for each summary
(compaction) on it. Below, every branch point of the session with its branches, each a
link that opens that branch in the chat (its newest leaf), the one on screen marked.

Built from the rows the page reads anyway (`get_tree()`, one query) and the overlays
(one more), so its cost does not depend on the session's size beyond that read.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory_core.tree import Compaction, TreeRow, depth_order

MAX_POINTS = 200  # branch points listed; a session with more says how many are left out


@dataclass
class BranchPoint:
    at: TreeRow | None  # the message the branches start under (None: several roots)
    depth: int
    branches: list[dict[str, Any]] = field(default_factory=list)
    on_path: bool = False
    left: float = 0.0  # where on the strip, in percent (points on the branch on screen)


@dataclass
class Band:
    compaction: Compaction
    count: int
    left: float
    width: float
    first: str
    last: str


def branch_map(rows: list[TreeRow], leaf_id: str | None,
               overlays: list[Compaction]) -> dict[str, Any]:
    by_id = {r.id: r for r in rows}
    depth = {r.id: d for r, d in depth_order(rows)}
    children: dict[str | None, list[TreeRow]] = {}
    for r in rows:
        children.setdefault(r.parent_id, []).append(r)
    path: list[str] = []
    current = leaf_id
    seen: set[str] = set()
    while current is not None and current in by_id and current not in seen:
        seen.add(current)
        path.append(current)
        current = by_id[current].parent_id
    path.reverse()
    on_path = set(path)
    length = max(len(path), 1)

    def left(message_id: str) -> float:
        return round(100 * depth.get(message_id, 0) / length, 2)

    points: list[BranchPoint] = []
    parents = [None] if len(children.get(None, [])) > 1 else []
    parents += [r.id for r, _ in depth_order(rows) if r.child_count > 1]
    for parent in parents:
        kids = children.get(parent, [])
        point = BranchPoint(at=by_id.get(parent) if parent else None,
                            depth=depth.get(parent, -1) + 1 if parent else 0)
        for i, kid in enumerate(kids, 1):
            point.branches.append({"n": i, "row": kid, "current": kid.id in on_path})
        point.on_path = (parent is None and bool(path)) or parent in on_path
        point.left = left(parent) if parent else 0.0
        points.append(point)
    bands = []
    for c in overlays:
        if c.from_message_id in on_path and c.to_message_id in on_path:
            start, end = depth[c.from_message_id], depth[c.to_message_id]
            bands.append(Band(c, end - start + 1, left(c.from_message_id),
                              round(100 * (end - start + 1) / length, 2),
                              by_id[c.from_message_id].preview, by_id[c.to_message_id].preview))
    return {"points": points[:MAX_POINTS], "more_points": max(0, len(points) - MAX_POINTS),
            "on_path_points": [p for p in points if p.on_path], "bands": bands,
            "path_length": len(path)}
