"""Template filters of the UI: stored text becomes markup only through rendering.py."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from .. import rendering

register = template.Library()


@register.filter
def message_html(message: Any) -> SafeString:
    """A message's parts as safe HTML (Markdown, collapsed tools and reasoning)."""
    return rendering.render_parts(message)


@register.filter
def snippet(text: str) -> SafeString:
    """A search snippet with its matched words in <mark>, everything else escaped."""
    return rendering.snippet_html(text or "")


@register.filter
def markdown(text: str) -> SafeString:
    """Markdown text (a summary, say) as safe HTML."""
    return rendering.render_markdown(text or "")
