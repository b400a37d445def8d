"""`python -m benchmarks.chat_import [--conversations N] [--messages M] [--text C]`: time
`manage.py import_chats` on a generated ChatGPT export (issue 30's target: 20,000 messages
in 200 conversations, about 17 MB, under 20 s) on the database DATABASE_URL names, and
report the command's peak RSS. The export is written as it is generated: every 5th
assistant message has a regenerated sibling, so the trees branch (110 messages stored for
--messages 100)."""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("lisbon flight train porto budget hotel museum tram coffee river bridge castle "
         "garden market beach sunset dinner ticket station morning").split()


def write_chatgpt(out: IO[str], *, conversations: int, messages: int, text: int) -> None:
    out.write("[")
    for c in range(conversations):
        mapping: dict[str, dict] = {"root": {"id": "root", "parent": None, "children": [],
                                             "message": None}}
        parent, current = "root", "root"
        for m in range(messages):
            nid = f"c{c}m{m}"
            role = "user" if m % 2 == 0 else "assistant"
            words = " ".join(WORDS[(c * 7 + m * 3 + i) % len(WORDS)] for i in range(text // 7))
            mapping[nid] = {"id": nid, "parent": parent, "children": [], "message": {
                "id": nid, "author": {"role": role, "name": None, "metadata": {}},
                "create_time": 1_700_000_000 + c * 1000 + m, "content": {
                    "content_type": "text", "parts": [f"{m}: {words}"]},
                "status": "finished_successfully", "metadata": {}, "recipient": "all"}}
            mapping[parent]["children"].append(nid)
            if role == "assistant" and m % 10 == 9:  # a regenerated answer beside it
                alt = dict(mapping[nid], id=f"{nid}b", children=[])
                alt["message"] = dict(alt["message"], id=f"{nid}b")
                mapping[f"{nid}b"] = alt
                mapping[parent]["children"].append(f"{nid}b")
            parent = current = nid
        out.write(("," if c else "") + json.dumps({
            "title": f"Conversation {c}", "create_time": 1_700_000_000 + c * 1000,
            "update_time": 1_700_000_000 + c * 1000 + messages, "mapping": mapping,
            "current_node": current, "conversation_id": f"bench-{c}", "id": f"bench-{c}"}))
    out.write("]")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.chat_import")
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--messages", type=int, default=100)
    parser.add_argument("--text", type=int, default=640, help="characters per message")
    args = parser.parse_args(argv)
    python = str(ROOT / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "conversations.json"
        with open(path, "w") as f:
            write_chatgpt(f, conversations=args.conversations, messages=args.messages,
                          text=args.text)
        env = dict(os.environ)
        run = [python, "manage.py"]
        subprocess.run([*run, "migrate", "-v0"], cwd=ROOT, env=env, check=True)
        agent = subprocess.run([*run, "shell", "-c", (
            "from django.contrib.auth.models import User; from sessions_app.models import "
            "Agent; u, _ = User.objects.get_or_create(username='bench-import'); "
            "print(Agent.objects.create(owner=u, name='import bench').id)")],
            cwd=ROOT, env=env, check=True, capture_output=True, text=True).stdout.split()[-1]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run([*run, "import_chats", "--agent", agent, str(path),
                               "--no-progress"], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        seconds = time.perf_counter() - started
        if done.returncode:
            print(done.stderr, file=sys.stderr)
            return 1
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        # CPU time beside wall time: on a shared machine the wall clock measures the
        # neighbours too.
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        rss = after.ru_maxrss / 1024
        summary = json.loads(done.stdout)
        stored = sum(s["messages"] for s in summary["sessions"])
        load = os.getloadavg()[0]
        print(f"load {load:.1f} on {os.cpu_count()} cores; {path.stat().st_size / 1e6:.1f} MB, {len(summary['sessions'])} conversations, "
              f"{stored:,} messages: {seconds:.1f} s ({cpu:.1f} s CPU), peak RSS {rss:.0f} MB "
              f"({'postgres' if 'postgres' in env.get('DATABASE_URL', '') else 'sqlite'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
