// What the chat page's controls do by themselves, beside the live view (chat.js uses
// this as Arbor.ui): copying, the edit form, the session links, code blocks' Copy.
(function () {
  "use strict";
  const Arbor = (window.Arbor = window.Arbor || {});

  async function copyText(text, button) {
    try {
      await navigator.clipboard.writeText(text);
    } catch {
      const area = document.createElement("textarea");
      area.value = text;
      document.body.append(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    if (!button) return;
    const label = button.dataset.label || button.textContent;
    button.dataset.label = label;
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = label; }, 1200);
  }

  function toggleEdit(el, open) {
    const form = el.querySelector(".edit-form");
    const button = el.querySelector("button.edit");
    form.hidden = !open;
    button.setAttribute("aria-expanded", String(open));
    if (open) form.querySelector("textarea").focus();
    else button.focus();
  }

  // Tree, Usage and Export Markdown open on the branch on screen, which may have changed
  // since the page was rendered (a branch switch, a new message).
  document.addEventListener("click", (event) => {
    const link = event.target.closest(".session-links a[data-leaf]");
    const thread = document.getElementById("thread");
    if (!link || !thread || !thread.dataset.leafId) return;
    const url = new URL(link.href);
    url.searchParams.set("leaf", thread.dataset.leafId);
    link.href = url;
  });

  // A code block's Copy copies its code, as written.
  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.copy-code");
    if (!button) return;
    const code = button.closest(".codeblock").querySelector("pre");
    if (code) copyText(code.innerText.replace(/\n$/, ""), button);
  });

  // Everything on screen that describes the session follows its events: the sidebar's
  // name and message count, the header's usage.
  function describe(frame, sessionId) {
    const data = frame.data || {};
    const entry = document.querySelector(`.nav-sessions li[data-session-id="${CSS.escape(sessionId)}"]`);
    const count = entry && entry.querySelector(".count");
    const setCount = (n) => {
      if (!count) return;
      const value = Math.max(0, n);
      count.dataset.count = String(value);
      count.textContent = value.toLocaleString("en");
      count.nextSibling.textContent = value === 1 ? " msg" : " msgs";
    };
    const current = count ? Number(count.dataset.count) : 0;
    if (frame.type === "message.appended") setCount(current + 1);
    else if (frame.type === "messages.deleted") setCount(data.all ? 0 : current - (data.count || (data.ids || []).length));
    else if (frame.type === "session.renamed" && entry) entry.querySelector("a").textContent = data.name || "Untitled";
    else if (frame.type === "session.updated" && "input_tokens" in data) {
      const usage = document.querySelector(".usage-total");
      if (!usage) return;
      const total = (data.input_tokens || 0) + (data.output_tokens || 0);
      const cost = data.estimated_cost ? ` · $${Number(data.estimated_cost).toFixed(4)}` : "";
      usage.textContent = `${total} tok${cost}`;
      usage.title = `${data.input_tokens} tokens in, ${data.output_tokens} out`;
    }
  }

  Arbor.ui = { copyText, toggleEdit, describe };
})();
