"""Real sentences that answer none of the recall set's questions, to load beside it
(`python -m benchmarks.recall --distractors N`): a larger agent, in which the words and the
meaning of a question find many more candidates than the set's 292 messages give them.

They are the sentences of the Python standard library's docstrings (technical English, as
much of an agent's memory is), in a fixed shuffle, so a run is repeatable on one Python
version (not this README's: each edit of it drew another set).
"""

from __future__ import annotations

import importlib
import inspect
import random
import re
import warnings

MODULES = """os re json collections asyncio email http.client urllib.request logging argparse
datetime decimal shutil subprocess threading socket ssl sqlite3 csv zipfile tarfile pathlib
random statistics fractions heapq bisect functools itertools unittest difflib
textwrap string calendar locale gettext smtplib imaplib ftplib uuid hashlib hmac secrets
base64 binascii struct codecs io tempfile glob fnmatch pickle shelve dbm gzip bz2 lzma
configparser tomllib plistlib xml.dom.minidom xml.etree.ElementTree html.parser webbrowser
wave colorsys pdb profile timeit trace tracemalloc gc inspect dis ast tokenize queue sched
contextvars concurrent.futures multiprocessing signal mmap select selectors typing enum
dataclasses abc numbers math array weakref copy pprint reprlib operator contextlib traceback
warnings builtins types importlib pkgutil runpy code doctest pydoc platform errno ctypes
optparse getopt shlex cmd netrc mailbox mimetypes quopri urllib.parse http.server
http.cookies http.cookiejar xmlrpc.client xmlrpc.server ipaddress socketserver
wsgiref.simple_server unicodedata filecmp stat fileinput linecache zlib compileall
py_compile pyclbr symtable tabnanny zipapp sysconfig asyncio.streams asyncio.subprocess
email.message email.utils email.policy logging.handlers logging.config unittest.mock
multiprocessing.pool multiprocessing.managers collections.abc importlib.metadata
importlib.resources xml.sax xml.sax.saxutils xml.dom.pulldom graphlib turtle curses
tkinter idlelib.editor lib2to3.pytree""".split()
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n\s*\n")


def _sentences(text: str) -> list[str]:
    out = []
    for piece in _SENTENCE_END.split(text):
        line = " ".join(piece.split())
        if 40 < len(line) < 300 and not line.startswith("|") and "(" not in line[:20]:
            out.append(line)
    return out


def sentences(count: int) -> list[str]:
    """`count` distinct sentences (fewer if there are not as many)."""
    modules = []
    for name in MODULES:  # all imported first: an import adds names to others (submodules)
        try:
            modules.append(importlib.import_module(name))
        except ImportError:
            continue
    found: list[str] = []
    for module in modules:
        with warnings.catch_warnings():  # a module's deprecated members, read for their text
            warnings.simplefilter("ignore", DeprecationWarning)
            members = inspect.getmembers(module)
        for attr, value in members:
            # (a submodule is an attribute only once something imported it: left out)
            doc = None if attr.startswith("_") or inspect.ismodule(value) else inspect.getdoc(value)
            if doc:
                found.extend(_sentences(doc))
                if inspect.isclass(value):  # and its methods' own docstrings
                    found.extend(sentence for name, method in vars(value).items()
                                 if not name.startswith("_") and (
                                     inspect.isroutine(method) or isinstance(method, property))
                                 and (text := method.__doc__)
                                 for sentence in _sentences(inspect.cleandoc(text)))
    unique = list(dict.fromkeys(found))
    random.Random(1).shuffle(unique)
    return unique[:count]


def messages(count: int, per_session: int = 500) -> list[list[dict[str, str]]]:
    """The sentences as sessions of `per_session` messages, user and assistant in turn."""
    texts = sentences(count)
    return [[{"role": "user" if n % 2 == 0 else "assistant", "content": t}
             for n, t in enumerate(texts[start:start + per_session])]
            for start in range(0, len(texts), per_session)]
