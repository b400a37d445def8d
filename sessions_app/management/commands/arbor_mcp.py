"""arbor_mcp --agent <id> [--session <id>]: serve one agent's memory over MCP on stdio.

For Claude Desktop, IDE agents and the OpenAI Agents SDK's MCPServerStdio: the client
starts this command and speaks JSON-RPC on its stdin/stdout. The agent's sessions are in
reach (another agent's answer as missing); with --session, that session's memory tools
(set_context, ...) and resources are served too. Needs the `mcp` extra.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory_core import ArborError
from memory_core.limits import is_id
from sessions_app.auth import Principal
from sessions_app.models import Agent


class Command(BaseCommand):
    help = "Serve an agent's memory as an MCP server over stdio (needs arbor[mcp])."
    requires_system_checks: list[str] = []  # nothing may reach stdout but JSON-RPC

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--agent", required=True, help="The agent whose memory to serve.")
        parser.add_argument("--session", help="A session of that agent to put in scope: its "
                            "memory tools and resources are served.")

    def handle(self, *args: Any, agent: str, session: str | None, **options: Any) -> None:
        try:
            import anyio
            from mcp.server.stdio import stdio_server

            from sessions_app.mcp.scope import McpScope
            from sessions_app.mcp.server import build_server
        except ImportError as exc:
            raise CommandError(f"the MCP server needs the mcp extra: pip install "
                               f"'arbor[mcp]' ({exc})") from None
        row = Agent.objects.filter(id=agent).first() if is_id(agent) else None
        if row is None:
            raise CommandError(f"agent {agent} not found")
        principal = Principal(user_id=row.owner_id, agent_id=row.id, door="mcp")
        try:
            scope = McpScope.build(principal, agent_id=row.id, session_id=session)
        except ArborError as exc:
            raise CommandError(f"{exc.detail} (in agent {row.id})") from None
        server = build_server(lambda ctx: scope)

        async def serve() -> None:
            async with stdio_server() as (read_stream, write_stream):
                await server.run(read_stream, write_stream,
                                 server.create_initialization_options())

        anyio.run(serve)
