"""daphne, saying where it serves once it is listening: `python -m arbor.serve -b HOST -p PORT
arbor.asgi:application` takes daphne's own arguments (`make run` uses it).

The addresses come from the sockets daphne actually bound, so they are true whatever
HOST and PORT were asked for (port 0 included); nothing is printed if binding failed.
"""

from __future__ import annotations

import sys
from typing import Any

from daphne.cli import CommandLineInterface
from daphne.server import Server

PAGES = (("Chat", "/"), ("Admin", "/admin/"), ("API docs", "/api/v1/docs"))
ANY_ADDRESS = {"0.0.0.0": "127.0.0.1", "::": "::1"}


def base_url(host: str, port: int) -> str:
    # Listening on every address: this machine's loopback is one that surely answers.
    host = ANY_ADDRESS.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def banner(addresses: list[tuple[str, int]]) -> str:
    lines = []
    for host, port in addresses:
        base = base_url(host, port)
        lines += [f"Arbor is serving on {base}/"] + [
            f"  {name + ':':<10}{base}{path}" for name, path in PAGES]
    lines += ["Sign in as 'demo' with the password printed the first time (lost it? "
              "`make demo-password` sets a new one).", "Ctrl+C stops the server."]
    return "\n".join(lines)


class _Server(Server):  # type: ignore[misc]
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # daphne calls this once its sockets are bound, just before it starts serving.
        super().__init__(*args, ready_callable=self._announce, **kwargs)

    def _announce(self) -> None:
        print(banner(self.listening_addresses), flush=True)


class _Cli(CommandLineInterface):  # type: ignore[misc]
    server_class = _Server


if __name__ == "__main__":
    _Cli().run(sys.argv[1:])
