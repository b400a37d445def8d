"""Operators' admin: trees are read-only here; every write goes through the engine.

Renames, deletions and overlay removals call SessionManager / Session, so search rows,
overlays and re-parenting stay consistent; no admin form can set a parent id.

Modules: `lists.py` (what every list page of a large table shares), `display.py` (the
engine's state as read-only HTML), and one module per model's admin, imported here so
Django registers them.
"""

from . import agents, erasures, keys, messages, sessions  # noqa: F401  (each registers its admins)
