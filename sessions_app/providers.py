"""Providers that need Django APIs: skills kept as files in a Django storage."""

from __future__ import annotations

import posixpath

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.core.files.storage import Storage, storages
from django.core.files.storage.handler import InvalidStorageError

SKILL_SUFFIX = ".md"


def skills_storage() -> Storage:
    """STORAGES["skills"] when configured (S3/R2 through django-storages), else the
    local folder ARBOR_SKILLS_DIR."""
    try:
        return storages["skills"]
    except InvalidStorageError:
        from django.core.files.storage import FileSystemStorage

        return FileSystemStorage(location=settings.ARBOR_SKILLS_DIR)


class FileSkills:
    """Each `<key>.md` in a folder is a skill. Its description is the first line when it
    reads `description: ...`, else the first heading or line of text."""

    def __init__(self, location: str, storage: Storage | None = None) -> None:
        self.location = location.strip("/")
        self.storage = storage or skills_storage()

    def _path(self, key: str) -> str | None:
        if not key or "/" in key or "\\" in key or key.startswith("."):
            return None  # a key names a file in this folder, never a path out of it
        return posixpath.join(self.location, key + SKILL_SUFFIX)

    def keys(self) -> list[str]:
        try:
            _, files = self.storage.listdir(self.location)
        except (FileNotFoundError, NotADirectoryError, SuspiciousFileOperation):
            return []
        return sorted(f[: -len(SKILL_SUFFIX)] for f in files if f.endswith(SKILL_SUFFIX))

    def _read(self, key: str) -> str | None:
        path = self._path(key)
        try:
            if path is None or not self.storage.exists(path):
                return None
        except SuspiciousFileOperation:  # a path that would leave the skills storage
            return None
        with self.storage.open(path, "rb") as handle:
            return handle.read().decode("utf-8", errors="replace")

    @staticmethod
    def describe(content: str) -> str:
        for line in content.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.lower().startswith("description:"):
                return line.split(":", 1)[1].strip()
            return line.lstrip("#").strip()
        return ""

    def get(self) -> str:
        lines = []
        for key in self.keys():
            description = self.describe(self._read(key) or "")
            lines.append(f"- {key}: {description}" if description else f"- {key}")
        return "\n".join(lines)

    def load(self, key: str) -> str | None:
        return self._read(key)
