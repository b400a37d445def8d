"""What the browser tests share: a person who can sign in, signing in, and screenshots.

    alice = person("alice", blocks=[...])   # an agent "Helper" whose owner has PASSWORD
    login(page, site)                       # through the login form, lands on /
    shoot(page, "chat")                     # light and dark, 1280 and 375 px
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from playwright.sync_api import expect

from memory_core import SessionManager
from tests.conftest import make_agent
from tests.live_server import ROOT

SHOTS = ROOT / "test-output" / "screenshots"
PASSWORD = "correct horse battery"
MEMORY = [{"label": "memory", "kind": "writable", "description": "Learned facts",
           "max_tokens": 500}]


def person(username: str = "alice", agent_name: str = "Helper",
           blocks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A user with PASSWORD and one agent (with `blocks` as its block templates)."""
    agent = make_agent(username, agent_name)
    agent.context = MEMORY if blocks is None else blocks
    agent.save(update_fields=["context"])
    agent.owner.set_password(PASSWORD)
    agent.owner.save()
    return {"agent": agent, "user": agent.owner, "manager": SessionManager.for_agent(agent)}


def asked(manager: SessionManager, title: str, question: str, *answers: str) -> Any:
    """A session `title` holding `question` and each of `answers` beside the others (a
    branch each after the first): (session id, the question, the answers)."""
    sid = manager.create(title).id
    q, first = manager.append_all(sid, [{"role": "user", "content": question},
                                        {"role": "assistant", "content": answers[0]}])
    rest = [manager.append(sid, {"role": "assistant", "content": a}, parent_id=q.id)
            for a in answers[1:]]
    return sid, q, [first, *rest]


def sign_in(page: Any, username: str = "alice") -> None:
    """Fill in the login form the page is on."""
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def login(page: Any, site: str, username: str = "alice") -> None:
    page.goto(f"{site}/")
    expect(page).to_have_url(re.compile(r"/login/"))
    sign_in(page, username)
    expect(page.get_by_role("heading", name="Sessions")).to_be_visible()


def shoot(page: Any, name: str, each: Callable[[str, str], None] | None = None) -> None:
    """The page as a person sees it: light and dark, desktop and a 375 px phone, saved
    as test-output/screenshots/<name>-<desktop|phone>-<light|dark>.png. `each(label,
    scheme)` runs at every size first (e.g. to open a panel or take more pictures)."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        for width, label in ((1280, "desktop"), (375, "phone")):
            page.set_viewport_size({"width": width, "height": 900})
            page.wait_for_timeout(150)  # layout settles after the resize
            if each is not None:
                each(label, scheme)
            page.screenshot(path=str(SHOTS / f"{name}-{label}-{scheme}.png"))
    page.emulate_media(color_scheme="light")
    page.set_viewport_size({"width": 1280, "height": 900})
