"""The static highlight stylesheet is exactly what pygments_css() makes."""

from __future__ import annotations

from sessions_app.rendering import HIGHLIGHT_CSS_PATH, pygments_css


def test_static_file_matches_the_generator():
    assert HIGHLIGHT_CSS_PATH.read_text(encoding="utf-8") == pygments_css(), (
        "static/arbor/highlight.css is stale: run "
        "`.venv/bin/python -c 'from sessions_app.rendering import write_pygments_css as w; w()'`")


def test_light_and_dark_rules():
    css = pygments_css()
    light, dark = css.split("@media (prefers-color-scheme: dark) {")
    assert ".highlight .k {" in light
    assert ":root .highlight .k {" in dark
    assert css.count("{") == css.count("}")
