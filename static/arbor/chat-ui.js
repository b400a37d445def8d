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

  // Keyboard: j / k move between messages, and the focused message's actions have a key
  // each (listed in the "?" dialog). Not while typing.
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  const KEYS = { e: "button.edit", r: "button.regenerate", c: "button.copy", f: "button.fork" };
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(document.activeElement)) return;
    const all = Array.from(document.querySelectorAll("#thread article.message")).filter((el) => el.offsetParent);
    if (!all.length) return;
    const here = document.activeElement && document.activeElement.closest("article.message");
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      let i = all.indexOf(here);
      if (i < 0) i = event.key === "k" ? all.length : -1;
      const next = all[Math.max(0, Math.min(all.length - 1, i + (event.key === "j" ? 1 : -1)))];
      next.focus();
      next.scrollIntoView({ block: "nearest" });
    } else if (here && KEYS[event.key]) {
      const button = here.querySelector(`:scope > footer ${KEYS[event.key]}`);
      if (button && !button.disabled) { event.preventDefault(); button.click(); }
    } else if (event.key === "p") {
      const toggle = document.querySelector(".pp-toggle");
      if (toggle) { event.preventDefault(); toggle.click(); toggle.focus(); }
    } else if (event.key === "/") {
      const input = document.getElementById("message-input");
      if (input) { event.preventDefault(); input.focus(); }
    }
  });

  // A screen reader hears the turn start and end (the streamed text itself is not read
  // out word by word), and the status line's messages.
  function announce(text) {
    const region = document.getElementById("live-announce");
    if (region) region.textContent = text;
  }

  function banner(text, { quiet = false } = {}) {
    const el = document.getElementById("session-banner");
    el.textContent = text;
    el.classList.toggle("quiet", quiet);
    el.hidden = false;
    return el;
  }

  // "Summarised 1,270 messages. Show the summary": the marker may be far above.
  async function compacted(base, overlay) {
    let info = null;
    try {
      const response = await fetch(`${base}compactions/${encodeURIComponent(overlay.id)}/`);
      if (response.ok) info = await response.json();
    } catch { info = null; }
    const count = info ? info.count : null;
    const el = banner(count === null ? "Summarised the older messages. "
      : `Summarised ${count.toLocaleString("en")} message${count === 1 ? "" : "s"}. `, { quiet: true });
    const link = document.createElement("a");
    link.href = "#cm-" + overlay.id;
    link.className = "to-marker";
    link.textContent = "Show the summary";
    link.addEventListener("click", (event) => {
      event.preventDefault();
      window.Arbor.paging.jumpToMarker(overlay.id, overlay.from_message_id);
    });
    el.append(link);
  }

  Arbor.ui = { announce, banner, compacted, copyText, toggleEdit, describe };
})();
