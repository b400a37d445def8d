"""The browser UI (SPEC §11): server-rendered pages for a logged-in person.

`home.py` the session list, create/rename/delete and search; `chat.py` the chat view and
its fragments; `actions.py` what a person does to a conversation (send, edit, regenerate,
fork, stop); `common.py` the lookups every view shares, scoped to the user.
"""
