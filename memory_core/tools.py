"""The memory tools the model calls (SPEC §5), in OpenAI, Anthropic and MCP formats.

One definition per tool; `execute()` turns every failure into an error string, since a
tool that raises would end the model's turn instead of letting it correct itself.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ArborError, InvalidInput
from .prompt import percent
from .snippets import plain_text, snippet
from .words import query_terms

if TYPE_CHECKING:
    from .blocks import Block
    from .context import SessionContext
    from .search import SearchHit

log = logging.getLogger(__name__)
FORMATS = ("openai", "anthropic", "mcp")


@dataclass(frozen=True)
class ToolResult:
    content: str
    is_error: bool = False


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    run: Callable[[Mapping[str, Any]], str]

    def execute(self, args: Any) -> str:
        """Run the tool; never raises. Errors come back as 'Error: ...' strings."""
        return self.call(args).content

    def call(self, args: Any) -> ToolResult:
        if not isinstance(args, Mapping):
            return ToolResult("Error: arguments must be a JSON object", True)
        problem = _check_args(self.input_schema, args)
        if problem:
            return ToolResult(f"Error: {problem}", True)
        try:
            return ToolResult(self.run(args))
        except ArborError as exc:
            return ToolResult(f"Error: {exc.detail}", True)
        except Exception:  # a provider's bug must not end the model's turn
            log.exception("tool %s failed", self.name)
            return ToolResult(f"Error: {self.name} failed unexpectedly", True)

    def to_format(self, fmt: str) -> dict[str, Any]:
        if fmt == "openai":
            return {"type": "function", "function": {
                "name": self.name, "description": self.description,
                "parameters": self.input_schema}}
        if fmt == "anthropic":
            return {"name": self.name, "description": self.description,
                    "input_schema": self.input_schema}
        if fmt == "mcp":
            return {"name": self.name, "description": self.description,
                    "inputSchema": self.input_schema}
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")


_TYPES: dict[str, type | tuple[type, ...]] = {
    "string": str, "integer": int, "object": dict, "array": list, "boolean": bool,
}


def _check_args(schema: Mapping[str, Any], args: Mapping[str, Any]) -> str | None:
    """The subset of JSON Schema our tools use: required, types, enums, no extras."""
    props = schema.get("properties", {})
    for name in schema.get("required", []):
        if args.get(name) is None:
            return f"missing required argument '{name}'"
    for name, value in args.items():
        if name not in props:
            return f"unknown argument '{name}'"
        if value is None:
            continue
        spec = props[name]
        expected = _TYPES.get(spec.get("type", ""))
        if expected and (not isinstance(value, expected) or (
                spec["type"] == "integer" and isinstance(value, bool))):
            return f"argument '{name}' must be of type {spec['type']}"
        if "enum" in spec and value not in spec["enum"]:
            return f"argument '{name}' must be one of {', '.join(map(str, spec['enum']))}"
        if spec.get("type") == "integer" and not (
                spec.get("minimum", value) <= value <= spec.get("maximum", value)):
            return f"argument '{name}' must be between {spec['minimum']} and {spec['maximum']}"
    return None


def _names(blocks: Sequence[Block]) -> str:
    return ", ".join(
        f"{b.label} ({b.spec.description})" if b.spec.description else b.label for b in blocks
    )


def _usage(tokens: int, limit: int | None) -> str:
    if not limit:
        return f"{tokens} tokens"
    return f"{tokens}/{limit} tokens ({percent(tokens, limit)}%)"


def session_tools(ctx: SessionContext) -> list[Tool]:
    """The tools this session's blocks enable."""
    blocks = ctx.blocks()
    writable = [b for b in blocks if b.kind == "writable" and b.settable]
    settable = [b for b in blocks if b.kind in ("skill", "search") and b.settable]
    skills = [b for b in blocks if b.kind == "skill"]
    searchable = [b for b in blocks if b.kind == "search"]
    tools: list[Tool] = []
    if writable or settable:
        tools.append(_set_context(ctx, writable, settable))
    if skills:
        tools += [_load_context(ctx, skills), _unload_context(ctx, skills)]
    if searchable:
        tools.append(_search_context(ctx, searchable))
    return tools


def _label_schema(blocks: Sequence[Block]) -> dict[str, Any]:
    return {"type": "string", "enum": [b.label for b in blocks],
            "description": "The block's label."}


def _set_context(ctx: SessionContext, writable: list[Block], settable: list[Block]) -> Tool:
    lines = ["Write to a context block of your system prompt. Changes are saved at once and "
             "show in the prompt from the next refresh."]
    if writable:
        budgets = "; ".join(
            f"{b.label}: {b.spec.description or 'writable text'}"
            + (f", at most {b.spec.max_tokens} tokens" if b.spec.max_tokens else "")
            for b in writable)
        lines.append(f"Writable blocks ({budgets}): action 'replace' (default) or 'append'.")
    if settable:
        lines.append(f"Blocks of keyed entries ({_names(settable)}): give a 'key'; skills "
                     "may take a 'description'.")
        limits = "; ".join(f"{b.label}: at most {b.spec.max_tokens} tokens"
                           for b in settable if b.spec.max_tokens)
        if limits:
            lines.append(f"Each entry is limited ({limits}).")

    def run(args: Mapping[str, Any]) -> str:
        label, content = args["label"], args["content"]
        block = next(b for b in writable + settable if b.label == label)
        if block.kind in ("skill", "search"):
            if not args.get("key"):
                raise InvalidInput(f"block '{label}' needs a 'key' for the entry to write")
            ctx.set_entry(label, args["key"], content, args.get("description"))
            return f"Saved entry '{args['key']}' in {label}."
        if args.get("key"):
            raise InvalidInput(f"block '{label}' is plain text and takes no 'key'")
        if args.get("action", "replace") == "append":
            report = ctx.append_context_block(label, content)
        else:
            report = ctx.replace_context_block(label, content)
        return f"Updated {label}: {_usage(report.tokens, report.max_tokens)} used."

    return Tool("set_context", " ".join(lines), {
        "type": "object",
        "properties": {
            "label": _label_schema(writable + settable),
            "content": {"type": "string", "description": "The text to write."},
            "key": {"type": "string", "description": "Entry key (skill and search blocks)."},
            "action": {"type": "string", "enum": ["replace", "append"],
                       "description": "For writable text blocks: replace or append."},
            "description": {"type": "string", "description": "One line about a skill."},
        },
        "required": ["label", "content"],
        "additionalProperties": False,
    }, run)


def _load_context(ctx: SessionContext, skills: list[Block]) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        return ctx.load_skill(args["label"], args["key"])

    return Tool(
        "load_context",
        f"Load the full text of a skill listed in a loadable block ({_names(skills)}). "
        "Unload it when done to free the context.",
        _skill_args(skills, "The skill's key, as listed."),
        run,
    )


def _unload_context(ctx: SessionContext, skills: list[Block]) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        ctx.unload_skill(args["label"], args["key"])
        return (f"Unloaded skill '{args['key']}'; it stays available through load_context.")

    return Tool(
        "unload_context",
        f"Unload a loaded skill ({_names(skills)}): its text leaves the conversation; "
        "it can be loaded again later.",
        _skill_args(skills, "The skill's key."),
        run,
    )


def _skill_args(skills: list[Block], key_description: str) -> dict[str, Any]:
    """Parameters of the skill tools: which block, which skill."""
    return {"type": "object", "properties": {
        "label": _label_schema(skills),
        "key": {"type": "string", "description": key_description}},
        "required": ["label", "key"], "additionalProperties": False}


def _search_context(ctx: SessionContext, blocks: list[Block]) -> Tool:
    def run(args: Mapping[str, Any]) -> str:
        block = ctx.block(args["label"])
        results = block.provider.search(args["query"])
        if not results:
            return f"No entries in {block.label} match '{args['query']}'."
        terms = query_terms(args["query"])
        lines = []
        for r in results[:10]:
            date = f" ({r.updated_at:%Y-%m-%d})" if r.updated_at else ""
            # An excerpt, not the whole entry: ten huge entries would flood the context.
            lines.append(f"- [{r.key}]{date} {snippet(r.content, terms, html_marks=False)}")
        return "\n".join(lines)

    return Tool(
        "search_context",
        f"Search the entries of a searchable block ({_names(blocks)}); returns the 10 most "
        "relevant, each with its date.",
        {"type": "object", "properties": {
            "label": _label_schema(blocks),
            "query": {"type": "string", "description": "Words or a question."}},
         "required": ["label", "query"], "additionalProperties": False},
        run,
    )


def _hit_line(h: SearchHit) -> str:
    """One hit for a model: date, where, who, the excerpt; then whether a newer hit
    corrects it and how many identical copies it stands for."""
    notes = [f"later corrected by {h.superseded_by}"] if h.superseded_by else []
    notes += [f"copies: {h.copies}"] if h.copies > 1 else []
    # Copies in other sessions (a fork's and its original's): the model can open them.
    notes += [f"also in [session {c.session_id}] [id {c.message_id}]"
              for c in h.other_copies if c.session_id != h.session_id]
    notes += ["found by meaning"] if h.matched == "meaning" else []
    return (f"- {h.created_at:%Y-%m-%d %H:%M} [session {h.session_id}] [id {h.id}] {h.role}: "
            f"{plain_text(h.snippet)}" + (f" ({'; '.join(notes)})" if notes else ""))


def session_search_tool(search: Callable[[str, int, str], Sequence[SearchHit]], *,
                        in_session: bool = True) -> Tool:
    """`search(query, limit, scope)`; in_session: the tool belongs to a session, so it
    offers scope "path" (the branch it stands on) and "session" beside "agent"."""
    scopes = ["agent", "session", "path"] if in_session else ["agent"]

    def run(args: Mapping[str, Any]) -> str:
        scope = args.get("scope") or "agent"
        if scope not in scopes:
            return f"Error: scope must be one of {', '.join(scopes)}."
        hits = search(args["query"], args.get("limit") or 10, scope)
        if not hits:
            return f"No past messages match '{args['query']}'."
        return "\n".join(_hit_line(h) for h in hits)

    properties: dict[str, Any] = {
        "query": {"type": "string", "description": "Words or a question."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 50,
                  "description": "How many hits (default 10)."}}
    if in_session:
        properties["scope"] = {"type": "string", "enum": scopes, "description": (
            "agent (default): your past sessions, not this one; session: this session, "
            "every branch; path: only what was said on the branch you are on.")}
    return Tool(
        "session_search",
        "Search the messages of your past sessions (not this one), by their words and "
        "their meaning. Each hit shows its date, id and an excerpt (a hit found by meaning "
        "alone shows its start); a hit a newer one corrects says "
        "'later corrected by <id>' (the correction ranks above it), and repeated texts "
        "show once with their number of copies and where the others are.",
        {"type": "object", "properties": properties,
         "required": ["query"], "additionalProperties": False},
        run,
    )


def export(tools: Sequence[Tool], fmt: str | None) -> list[Any]:
    if fmt is None:
        return list(tools)
    if fmt not in FORMATS:
        raise InvalidInput(f"format must be one of {', '.join(FORMATS)}")
    return [t.to_format(fmt) for t in tools]
