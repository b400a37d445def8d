"""Arbor as an MCP server (the optional `arbor[mcp]` extra, the official `mcp` SDK 2.x).

One server definition (server.py) serves two transports: stdio (`manage.py arbor_mcp`)
and streamable HTTP at /mcp/ in the ASGI app (http.py). Every call is scoped (scope.py)
like the JSON API: a principal, its agents, optionally one session in scope. Tools run
through the engine, so writes emit live events and respect budgets and read-only blocks.
"""
