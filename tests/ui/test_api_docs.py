"""/api/v1/docs in a real browser: Swagger UI loads its local assets, reads the OpenAPI
document and renders the operations, with no error box."""

from __future__ import annotations

from playwright.sync_api import expect


def test_api_docs_render_every_operation_without_errors(site, page):
    page.goto(f"{site}/api/v1/docs")

    chat = page.locator(".opblock", has_text="/api/v1/sessions/{session_id}/chat")
    expect(chat.first).to_be_visible()
    expect(page.locator(".opblock")).not_to_have_count(0)
    # Swagger UI shows parse problems (e.g. "duplicated mapping key") in an error box.
    expect(page.locator(".errors-wrapper")).to_have_count(0)
    assert page.locator(".opblock").count() >= 40
    assert page.console_errors == []


def test_chat_documents_both_response_types(site, page):
    page.goto(f"{site}/api/v1/docs")
    chat = page.locator(".opblock-post", has_text="/api/v1/sessions/{session_id}/chat").first
    chat.locator(".opblock-summary").click()

    media = chat.locator(".responses-wrapper select.content-type").first
    expect(media).to_be_visible()
    options = media.locator("option").all_inner_texts()
    assert {"application/json", "text/event-stream"} <= set(options)
