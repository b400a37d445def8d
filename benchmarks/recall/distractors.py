"""Real sentences that answer none of the recall set's questions, to load beside it
(`python -m benchmarks.recall --distractors N`): a larger agent, in which the words and the
meaning of a question find many more candidates than the set's 292 messages give them.

They are the sentences of this repository's README and of the Python standard library's
docstrings (technical English, as much of an agent's memory is), in a fixed shuffle, so a
run is repeatable on one Python version.
"""

from __future__ import annotations

import importlib
import inspect
import random
import re
import warnings
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
MODULES = """os re json collections asyncio email http.client urllib.request logging argparse
datetime decimal shutil subprocess threading socket ssl sqlite3 csv zipfile tarfile pathlib
random statistics fractions heapq bisect functools itertools unittest difflib
textwrap string calendar locale gettext smtplib imaplib ftplib uuid hashlib hmac secrets
base64 binascii struct codecs io tempfile glob fnmatch pickle shelve dbm gzip bz2 lzma
configparser tomllib plistlib xml.dom.minidom xml.etree.ElementTree html.parser webbrowser
wave colorsys pdb profile timeit trace tracemalloc gc inspect dis ast tokenize queue sched
contextvars concurrent.futures multiprocessing signal mmap select selectors""".split()
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")
_CODE_BLOCK = re.compile(r"```.*?```", re.S)


def _sentences(text: str) -> list[str]:
    out = []
    for piece in _SENTENCE_END.split(text):
        line = " ".join(piece.split())
        if 40 < len(line) < 300 and not line.startswith("|") and "(" not in line[:20]:
            out.append(line)
    return out


def sentences(count: int) -> list[str]:
    """`count` distinct sentences (fewer if there are not as many)."""
    found = _sentences(_CODE_BLOCK.sub("", README.read_text(encoding="utf-8")))
    for name in MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        with warnings.catch_warnings():  # a module's deprecated members, read for their text
            warnings.simplefilter("ignore", DeprecationWarning)
            members = inspect.getmembers(module)
        for attr, value in members:
            doc = None if attr.startswith("_") else inspect.getdoc(value)
            if doc:
                found.extend(_sentences(doc))
    unique = list(dict.fromkeys(found))
    random.Random(1).shuffle(unique)
    return unique[:count]


def messages(count: int, per_session: int = 500) -> list[list[dict[str, str]]]:
    """The sentences as sessions of `per_session` messages, user and assistant in turn."""
    texts = sentences(count)
    return [[{"role": "user" if n % 2 == 0 else "assistant", "content": t}
             for n, t in enumerate(texts[start:start + per_session])]
            for start in range(0, len(texts), per_session)]
