"""`python -m benchmarks.scale` runs end to end at a tiny size, so `make bench` cannot rot:
every figure is produced for every step, the ratios are computed, and a ratio above
the limit fails the run. No timing assertions."""

from __future__ import annotations

import pytest

from benchmarks import scale

pytestmark = pytest.mark.django_db(transaction=True)


def test_every_figure_for_every_step(monkeypatch):
    monkeypatch.setattr(scale, "PROBE_SESSIONS", 2)
    monkeypatch.setattr(scale, "PROBE_LEN", 20)
    monkeypatch.setattr(scale, "APPENDS", 5)
    monkeypatch.setattr(scale, "QUERIES", 3)
    monkeypatch.setattr(scale, "ROUNDS", 1)
    vendor, rows = scale.run([100, 700], progress=lambda _: None)

    assert [r.messages for r in rows] == [100, 700]  # 40 probe + whole other sessions
    for row in rows:
        assert set(row.figures) == {key for key, *_ in scale.COLUMNS}
        assert all(value > 0 for value in row.figures.values()), row.figures
    assert set(scale.ratios(rows)) == {key for key, *_ in scale.COLUMNS}
    assert "last/first" in scale.table(rows, "smoke")


def test_a_ratio_above_the_limit_fails_the_run():
    first = scale.Row(50_000, {key: 1.0 for key, *_ in scale.COLUMNS})
    last = scale.Row(500_000, {**first.figures, "search_agent": 2.0})
    assert scale.failures([first, last]) == ["search_agent 2.00x"]
    slower_loads = scale.Row(500_000, {**first.figures, "load_rate": 0.5})
    assert scale.failures([first, slower_loads]) == ["load_rate 2.00x"]
    assert scale.failures([first, first]) == []
