"""Benchmark figures, their targets, and how they are printed (table or JSON)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson


@dataclass(frozen=True, slots=True)
class Target:
    """A limit on the ratio arbor/baseline (`of_ratio`), or on Arbor's own figure."""

    limit: float
    of_ratio: bool = True
    exact: bool = False

    def met(self, result: Result) -> bool:
        value = result.ratio if self.of_ratio else result.arbor
        if self.exact:
            return value == self.limit
        return value <= self.limit

    def __str__(self) -> str:
        if self.exact:
            return f"= {self.limit:g}"
        return f"≤ {self.limit:g}×" if self.of_ratio else f"≤ {self.limit:g}"


@dataclass(frozen=True, slots=True)
class Result:
    key: str  # stable JSON key
    label: str  # what the table shows, sizes included
    arbor: float
    baseline: float
    unit: str
    target: Target | None = None

    @property
    def ratio(self) -> float:
        return self.arbor / self.baseline if self.baseline else math.nan

    @property
    def ok(self) -> bool | None:
        return None if self.target is None else self.target.met(self)


def misses(results: list[Result]) -> list[str]:
    """Keys of the figures that missed their target."""
    return [r.key for r in results if r.ok is False]


def exit_status(results: list[Result], problems: list[str]) -> int:
    """Non-zero when a target is missed or a run went wrong, so CI and scripts notice."""
    return 1 if problems or misses(results) else 0


def _number(value: float) -> str:
    if math.isnan(value):
        return "-"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}" if value < 1 else f"{value:.2f}"


def table(results: list[Result], *, title: str) -> str:
    head = ("benchmark", "arbor", "baseline", "ratio", "unit", "target", "ok")
    rows = [
        (
            r.label, _number(r.arbor), _number(r.baseline), f"{r.ratio:.2f}×", r.unit,
            str(r.target) if r.target else "",
            "" if r.ok is None else ("ok" if r.ok else "MISS"),
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]
    right = {1, 2, 3}

    def line(row: tuple[str, ...]) -> str:
        cells = (
            c.rjust(w) if i in right else c.ljust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([title, line(head), rule, *(line(r) for r in rows)])


def as_json(results: list[Result]) -> dict[str, dict[str, Any]]:
    return {
        r.key: {
            "arbor": r.arbor,
            "baseline": r.baseline,
            "ratio": r.ratio,
            "unit": r.unit,
            "label": r.label,
            "target": str(r.target) if r.target else None,
            "ok": r.ok,
        }
        for r in results
    }


def dumps(results: list[Result]) -> str:
    return orjson.dumps(as_json(results), option=orjson.OPT_INDENT_2).decode()
