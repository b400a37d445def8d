"""A deterministic, English-ish conversation corpus and natural-language questions.

Words follow a Zipf-like law (weight 1/rank^1.07) over a vocabulary of ~4,000 words:
a few hundred real English and engineering words at the head (stop words among
them), then made-up syllable words for the long tail, so every query word occurs
somewhere and the rare ones sit in few messages, as names and dates do in real chats.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator
from typing import Any

SEED = 20_241_122

_HEAD = """
the to and of a i you it is that in we for this on be with can do not have will what
are so if at as but your was my just about me or there it's from they an how would
need should could one all get our use when like then make now also which by let know
think here see more up out want set run look check time back new work try same file
data test code user message session agent memory search history branch tree model tool
server database query index table row column path leaf parent child prompt context block
summary token cost error bug fix patch release deploy deployment build pipeline branch
merge review commit change config setting value key secret cache queue worker thread
process request response api endpoint client service host port network latency timeout
retry limit budget week day monday tuesday wednesday thursday friday morning afternoon
meeting plan decision decide decided agree team customer report dashboard metric alert
incident outage rollback migration schema backup restore disk memory cpu load traffic
region cluster node container image version upgrade python django postgres sqlite redis
docker kubernetes linux logs log trace span health check monitor ticket issue feature
design document spec draft note list item task todo priority deadline estimate number
count total average report invoice account billing payment price plan trial order
project repo folder script job schedule cron backup window maintenance staging production
local remote laptop phone email calendar invite slack channel thread reply question answer
""".split()

_ONSETS = ["b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v",
           "w", "z", "br", "cr", "dr", "gr", "pl", "st", "tr", "sh", "ch", "th"]
_VOWELS = ["a", "e", "i", "o", "u", "a", "e", "o", "ea", "ou"]
_CODAS = ["", "", "n", "r", "s", "l", "m", "nd", "st", "rk", "x"]


def _tail_words(count: int, rng: random.Random) -> list[str]:
    seen = set(_HEAD)
    words: list[str] = []
    while len(words) < count:
        syllables = rng.choice((1, 2, 2, 2, 3))
        word = "".join(rng.choice(_ONSETS) + rng.choice(_VOWELS) for _ in range(syllables))
        word += rng.choice(_CODAS)
        if word not in seen:
            seen.add(word)
            words.append(word)
    return words


class Corpus:
    """Seeded generator of messages (AI SDK shape) and agent-phrased questions."""

    def __init__(self, *, vocabulary: int = 4_000, seed: int = SEED) -> None:
        self.rng = random.Random(seed)
        head = list(dict.fromkeys(_HEAD))
        self.words = head + _tail_words(max(vocabulary - len(head), 100), self.rng)
        weights = [1.0 / (rank + 1) ** 1.07 for rank in range(len(self.words))]
        self._cum = list(itertools.accumulate(weights))

    def _sentence(self) -> str:
        n = self.rng.randint(6, 18)
        words = self.rng.choices(self.words, cum_weights=self._cum, k=n)
        return " ".join(words).capitalize() + self.rng.choice((".", ".", ".", "?", "!"))

    def message(self, role: str) -> dict[str, Any]:
        sentences = self.rng.randint(1, 3) if role == "user" else self.rng.randint(2, 6)
        text = " ".join(self._sentence() for _ in range(sentences))
        return {"role": role, "parts": [{"type": "text", "text": text}]}

    def conversation(self, count: int) -> list[dict[str, Any]]:
        """`count` messages alternating user and assistant."""
        return [self.message("user" if i % 2 == 0 else "assistant") for i in range(count)]

    def stream(self) -> Iterator[dict[str, Any]]:
        for i in itertools.count():
            yield self.message("user" if i % 2 == 0 else "assistant")

    def questions(self, count: int) -> list[str]:
        """Natural-language questions mixing common, mid-frequency and rare words."""
        templates = (
            "what did we decide about the {0} {1}?",
            "which {0} did the {1} use for {2}?",
            "when was the {0} {1} fixed",
            "remind me what {0} said about {1} and {2}",
            "how do I {0} the {1}?",
            "did anyone mention {0}, {1} or {2} last week?",
            "what's the status of the {0} {1} ticket",
            "find the message about {0} {1}",
        )
        bands = (self.words[150:600], self.words[600:2000], self.words[2000:])
        out = []
        for i in range(count):
            words = [self.rng.choice(bands[(i + j) % 3]) for j in range(3)]
            out.append(templates[i % len(templates)].format(*words))
        return out
