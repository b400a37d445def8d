"""import_chats --agent ID FILE [--format F]: import another tool's export (ChatGPT,
Claude, Open WebUI, LibreChat, Pi; or an Arbor session document) into an agent.

The endpoint's work without its body limit: a top-level list (ChatGPT's conversations.json
runs to hundreds of megabytes) is read one conversation at a time, never held whole. All
or nothing, like the endpoint; a second run of the same file adds nothing. A progress bar
goes to stderr on a terminal; the summary, the endpoint's JSON, to stdout.
"""

from __future__ import annotations

import os
import sys
from typing import IO, Any

import orjson
from django.core.management.base import BaseCommand, CommandError, CommandParser
from pydantic import ValidationError as PydanticError

from memory_core import ArborError, SessionManager
from memory_core.imports import FORMATS, Conversation, import_conversations
from memory_core.imports.reading import NotJson, read, stream
from memory_core.transfer import import_session
from sessions_app.api.documents import SessionDocument
from sessions_app.models import Agent


class Command(BaseCommand):
    help = "Import a ChatGPT, Claude, Open WebUI, LibreChat or Pi export into an agent."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("file", help="the export: conversations.json, a chat .json, "
                            "a Pi session .jsonl")
        parser.add_argument("--agent", required=True, help="the agent's id")
        parser.add_argument("--format", default="auto", choices=["auto", "arbor", *FORMATS],
                            help="the export's format (default: detected from the content)")
        parser.add_argument("--no-progress", action="store_true",
                            help="no progress bar, even on a terminal")

    def handle(self, *args: Any, file: str, agent: str, format: str,  # noqa: A002
               no_progress: bool, **options: Any) -> None:
        row = Agent.objects.filter(id=agent).first()
        if row is None:
            raise CommandError(f"agent {agent} not found")
        manager = SessionManager.for_agent(row)
        try:
            with open(file, "rb") as f:
                summary = self._import(manager, f, format, no_progress)
        except OSError as exc:
            raise CommandError(f"cannot read {file}: {exc.strerror}") from None
        except ArborError as exc:
            raise CommandError(f"nothing imported: {exc.detail}") from None
        self.stdout.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2).decode())

    def _import(self, manager: SessionManager, f: IO[bytes], fmt: str,
                no_progress: bool) -> dict[str, Any]:
        document = _arbor_document(f, fmt)
        if document is not None:
            info = import_session(manager, document)
            return {"format": "arbor", "sessions": [{
                "id": info.id, "name": info.name, "messages": info.message_count,
                "source_id": None}], "skipped": []}
        found, conversations = stream(f, fmt)
        bar = Progress(f, sys.stderr) if not no_progress and sys.stderr.isatty() else None
        summary = import_conversations(manager, found, conversations,
                                       progress=bar.step if bar else None)
        if bar:
            bar.done()
        return summary.to_dict()


def _arbor_document(f: IO[bytes], fmt: str) -> dict[str, Any] | None:
    """Arbor's own session document, checked as the endpoint checks it; None for the
    other formats (the file is rewound)."""
    if fmt not in ("auto", "arbor") or f.read(4096).lstrip()[:1] != b"{":
        f.seek(0)
        return None
    f.seek(0)
    try:
        found, value = read(f.read(), fmt)
    except NotJson:
        if fmt == "arbor":
            raise
        found = "pi"  # JSON Lines
    f.seek(0)
    if found != "arbor":
        return None
    try:
        return SessionDocument.model_validate(value).model_dump()
    except PydanticError as exc:
        raise CommandError(f"nothing imported: not an Arbor session document: {exc}") from None


class Progress:
    """`[#####.....]  52%  104 conversations, 10,400 messages`, redrawn in place: the
    share of the file's bytes read so far."""

    WIDTH = 30

    def __init__(self, f: IO[bytes], out: IO[str]) -> None:
        self.f, self.out = f, out
        self.size = max(os.fstat(f.fileno()).st_size, 1)
        self.conversations = self.messages = 0

    def step(self, conversation: Conversation, messages: int) -> None:
        self.conversations += 1
        self.messages += messages
        share = min(self.f.tell() / self.size, 1.0)
        filled = int(share * self.WIDTH)
        self.out.write(f"\r[{'#' * filled}{'.' * (self.WIDTH - filled)}] {share:4.0%}  "
                       f"{self.conversations:,} conversations, {self.messages:,} messages")
        self.out.flush()

    def done(self) -> None:
        self.out.write("\n")
        self.out.flush()
