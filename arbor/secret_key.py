"""SECRET_KEY without configuration: generated on first start, kept in a private file.

`make run` must work with no settings, and a restart must not log everyone out, so the
key is random per installation and persisted. ARBOR_SECRET_KEY, when set, wins.
"""

from __future__ import annotations

import os
import secrets
import time
from pathlib import Path


def load_or_create(path: Path) -> str:
    """The key stored at `path`, creating it (mode 0600) when there is none yet.

    Two processes starting together must agree on one key: the new key is written to a
    private temporary file and hard-linked into place, which fails if another process got
    there first; the loser then reads the winner's (complete) file.
    """
    key = _read(path)
    if key:
        return key
    candidate = secrets.token_urlsafe(50)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(candidate + "\n")
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process won the race; use its key
    finally:
        tmp.unlink(missing_ok=True)
    return _wait_for_key(path)


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        return ""


def _wait_for_key(path: Path) -> str:
    # The linked file is complete when it appears; the retry only covers a key file
    # someone created by hand and is still writing.
    for _ in range(50):
        key = _read(path)
        if key:
            return key
        time.sleep(0.02)
    raise RuntimeError(f"{path} is empty: delete it or set ARBOR_SECRET_KEY")
