"""Conversations from other tools (ChatGPT, Claude, Open WebUI, LibreChat, Pi) as Arbor
sessions, every branch kept.

Pure functions from a file's bytes to neutral `Conversation`s (one module per format,
tree.py for what they share), and store.py, which hands them to the storage. Nothing
here imports the web app: the API, the command and the page all call `read`,
`conversations` and `import_conversations`.
"""

from __future__ import annotations

from .reading import FORMATS, conversations, detect, read
from .store import ImportSummary, import_conversations
from .tree import MAX_IMPORT_DEPTH, BadExport, Conversation, Node, plan

__all__ = ["FORMATS", "MAX_IMPORT_DEPTH", "BadExport", "Conversation", "ImportSummary",
           "Node", "conversations", "detect", "import_conversations", "plan", "read"]
