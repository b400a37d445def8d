"""seed_demo: a demo user, agent and two sessions (a branch and a fork). Safe to re-run.

`--new-password` (`make demo-password`) is the way back from a lost demo password: the
password is stored hashed and printed only when it is made.
"""

from __future__ import annotations

import secrets
from typing import Any

from axes.utils import reset as axes_reset
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from memory_core import SessionManager
from sessions_app.models import Agent

USERNAME = "demo"
AGENT_NAME = "Demo agent"
# One block of every provider kind (SPEC §15): identity, two budgets, search, skills.
DEMO_BLOCKS: list[dict[str, Any]] = [
    {"label": "soul", "kind": "readonly", "description": "Identity",
     "content": "You are Arbor's demo assistant: brief, concrete, and honest about what you "
                "do not know. Save lasting facts about the user to memory."},
    {"label": "memory", "kind": "writable", "description": "Learned facts", "max_tokens": 1100,
     "scope": "agent"},
    {"label": "todos", "kind": "writable", "description": "Open tasks", "max_tokens": 400},
    {"label": "knowledge", "kind": "search", "description": "Reference notes", "scope": "agent"},
    {"label": "skills", "kind": "skill", "description": "How-tos you can load", "files": "demo"},
]
KNOWLEDGE = {
    "lisbon-transport": "Lisbon: tram 28 crosses Alfama and Graça; a 24-hour Carris/Metro "
                        "pass costs about 7 euros. The airport is on the red metro line.",
    "packing": "Packing list: passport valid 6 months past return, EU plug adapter (type F), "
               "light rain jacket for spring.",
    "arbor-search": "Arbor search matches any word of a question, ranks rare words higher and "
                    "puts messages holding every word first.",
}


def _text(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "text": text}]}


class Command(BaseCommand):
    help = "Create the demo user, agent and sessions; re-running changes nothing."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--new-password", action="store_true",
            help=f"Give {USERNAME!r} a new random password, print it, and lift a sign-in "
                 "lockout on it (for a lost password).")

    def handle(self, *args: Any, **options: Any) -> None:
        with transaction.atomic():
            password = self._user(new_password=options["new_password"])
            agent, created = Agent.objects.get_or_create(
                owner=self._demo_user(), name=AGENT_NAME
            )
            self.stdout.write(f"{'Created' if created else 'Found'} agent {AGENT_NAME!r}.")
            if not agent.context:  # also upgrades a demo seeded before blocks existed
                agent.context = DEMO_BLOCKS
                agent.save(update_fields=["context"])
                self.stdout.write("Gave the demo agent its blocks: soul, memory, todos, "
                                  "knowledge, skills.")
            if created:  # only the first time, so sessions deleted later stay deleted
                self._sessions(SessionManager.for_agent(agent))
            else:
                self.stdout.write("Demo sessions were seeded before; left as they are.")
        key = self._api_key(agent)
        if key:
            self.stdout.write(self.style.SUCCESS(
                f"API key for the demo agent (shown only this once): {key}"))
        if password:
            # Printed after commit, and only once: it is stored hashed.
            self.stdout.write(self.style.SUCCESS(
                f"Sign in at / (the chat UI) and /admin/ as {USERNAME!r} with password "
                f"{password!r} (shown only this once)."
            ))

    def _api_key(self, agent: Agent) -> str | None:
        """A key for the demo agent, made once; only its hash is kept."""
        from sessions_app.auth import create_key
        from sessions_app.models import ApiKey

        existing = ApiKey.objects.filter(user=agent.owner, name="demo", revoked_at=None).first()
        if existing is not None:
            self.stdout.write(f"Demo API key {existing.prefix}… exists; make another with "
                              f"`python manage.py create_api_key {USERNAME}`.")
            return None
        _, raw = create_key(agent.owner, agent=agent, name="demo")
        return raw

    def _demo_user(self) -> Any:
        return get_user_model().objects.get(username=USERNAME)

    def _user(self, *, new_password: bool) -> str | None:
        """Create or fix up the demo user; its new password, or None if it kept its own."""
        users = get_user_model()
        user = users.objects.filter(username=USERNAME).first()
        password = None
        if user is None:
            password = secrets.token_urlsafe(12)
            user = users.objects.create_user(USERNAME, password=password)
            self.stdout.write(f"Created user {USERNAME!r}.")
        elif new_password:
            password = secrets.token_urlsafe(12)
            user.set_password(password)
            user.save(update_fields=["password"])
            # Whoever lost the password may have guessed until locked out: let them in now.
            axes_reset(username=USERNAME)
            self.stdout.write(f"Gave {USERNAME!r} a new password.")
        else:
            self.stdout.write(
                f"User {USERNAME!r} exists; its password is unchanged (lost it? "
                "`make demo-password`, or `python manage.py seed_demo --new-password`, "
                "sets and prints a new one).")
        if not (user.is_staff and user.is_superuser):
            user.is_staff = user.is_superuser = True  # so it can log into the admin
            user.save(update_fields=["is_staff", "is_superuser"])
            self.stdout.write(f"Made {USERNAME!r} staff and superuser.")
        return password

    def _sessions(self, manager: SessionManager) -> None:
        trip = manager.create("Trip to Lisbon", source="seed_demo")
        session = manager.get_session(trip.id)
        for key, text in KNOWLEDGE.items():
            session.set_context_entry("knowledge", key, text)
        session.replace_context_block("memory", "- Prefers window seats.")
        session.replace_context_block("todos", "- Book a hotel near Alfama.")
        first = manager.append_all(trip.id, [
            _text("user", "I'm going to Lisbon in May. Remember that I prefer window seats."),
            _text("assistant", "Noted: window seats. When would you like to fly?"),
            _text("user", "Book a flight to Lisbon on May 3."),
            _text("assistant", "Booked the 9:10 morning flight, window seat 14A."),
        ])
        ask, morning = first[2], first[3]
        # A regenerated answer: a second child of the same question, i.e. a branch.
        evening = manager.append(
            trip.id, _text("assistant", "Booked the 18:40 evening flight, window seat 22F."),
            parent_id=ask.id,
        )
        manager.append_all(trip.id, [
            _text("user", "The evening one is better. Any hotel ideas near Alfama?"),
            _text("assistant", "Try a guesthouse in Alfama close to the tram 28 stop."),
        ], parent_id=evening.id)
        # A fork: the morning-flight path continues in its own session.
        fork = manager.fork(trip.id, morning.id, "Trip to Lisbon (morning flight)")
        manager.append_all(fork.id, [
            _text("user", "Keep the morning flight. What can I do on the first afternoon?"),
            _text("assistant", "Walk up to the Castelo de São Jorge, then dinner in Mouraria."),
        ])
        self.stdout.write(f"Created sessions {trip.name!r} (with a branch) and {fork.name!r} "
                          "(a fork of it).")
