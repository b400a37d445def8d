"""The browser UI's URLs (SPEC §11); the JSON API lives under /api/v1."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import path

from .views import actions, chat, home, last_leaf, overlays
from .views import block_history as history_pages
from .views import inspector as inspector_pages
from .views import lifecycle as lifecycle_pages
from .views import manage as manage_pages
from .views import tree as tree_pages

S = "sessions/<str:session_id>/"
M = S + "messages/<str:message_id>/"



def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever a page links (the admin, the API docs)."""
    return HttpResponsePermanentRedirect(static("arbor/favicon.svg"))


urlpatterns = [
    path("favicon.ico", favicon, name="favicon"),
    path("", home.home, name="home"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("search/", home.search, name="search"),
    path("sessions/new", home.create_session, name="session-create"),
    path(S, chat.chat, name="chat"),
    path(S + "older", chat.older, name="chat-older"),
    path(S + "shown", last_leaf.shown, name="chat-shown"),
    path(S + "rename", home.rename_session, name="session-rename"),
    path(S + "delete", home.delete_session, name="session-delete"),
    path(S + "send", actions.send, name="chat-send"),
    path(S + "stop", actions.stop, name="chat-stop"),
    path(S + "compact", actions.compact, name="chat-compact"),
    path(S + "compactions/<str:compaction_id>/undo", actions.undo_compaction,
         name="compaction-undo"),
    path(S + "compactions/<str:compaction_id>/originals", overlays.overlay_originals,
         name="compaction-originals"),
    path(S + "compactions/<str:compaction_id>/", overlays.compaction_info,
         name="compaction-info"),
    path(S + "tree/", tree_pages.tree, name="session-tree"),
    path(S + "usage/", tree_pages.usage, name="session-usage"),
    path(S + "export.json", manage_pages.export_json, name="session-export-json"),
    path(S + "export.md", manage_pages.export_markdown, name="session-export-md"),
    path("import/", manage_pages.import_page, name="session-import"),
    path("keys/", manage_pages.keys, name="keys"),
    path("keys/<int:key_id>/revoke", manage_pages.revoke_key, name="key-revoke"),
    path("agents/<str:agent_id>/settings/", manage_pages.agent_settings, name="agent-settings"),
    path("agents/<str:agent_id>/retention", lifecycle_pages.agent_retention,
         name="agent-retention"),
    path("agents/<str:agent_id>/export.jsonl", lifecycle_pages.agent_export,
         name="agent-export"),
    path(S + "prompt/", inspector_pages.panel, name="prompt-panel"),
    path(S + "prompt/diff", inspector_pages.prompt_diff, name="prompt-diff"),
    path(S + "prompt/refresh", inspector_pages.refresh_prompt, name="prompt-refresh"),
    path(S + "prompt/blocks/<str:label>", inspector_pages.edit_block, name="prompt-block"),
    path(S + "prompt/blocks/<str:label>/unload", inspector_pages.unload_skill, name="prompt-unload"),
    path(S + "prompt/blocks/<str:label>/history", history_pages.history, name="prompt-history"),
    path(S + "prompt/blocks/<str:label>/versions/<int:number>/restore", history_pages.restore,
         name="prompt-restore"),
    path(M, chat.message, name="chat-message"),
    path(M + "edit", actions.edit, name="message-edit"),
    path(M + "branch", actions.branch, name="message-branch"),
    path(M + "regenerate", actions.regenerate, name="message-regenerate"),
    path(M + "fork", actions.fork, name="message-fork"),
]
