// The prompt panel beside the chat (views/inspector.py). The server renders the whole
// panel; this file loads it, re-fetches it when the session's context or prompt changes
// (chat.js re-dispatches every live frame as `arbor:event` on main.chat), and keeps what
// the reader was doing across a swap: collapsed or not, open sections, unsaved drafts,
// the focused field, an open refresh diff.
(function () {
  "use strict";

  const main = document.querySelector("main.chat");
  if (!main || !document.getElementById("prompt-panel")) return;
  const STORE = "arbor.promptPanel";
  const NOW = new Set(["context.updated", "prompt.refreshed"]);
  // The token gauge follows the branch: re-read it, less eagerly, when the branch grows.
  const LATER = new Set(["message.appended", "messages.deleted", "compaction.completed",
    "compaction.removed", "branch.created"]);

  const panel = () => document.getElementById("prompt-panel");
  const inPanel = (el) => !!(el && el.closest && el.closest("#prompt-panel"));
  let promptExpanded = false;
  let timer = null;
  let loading = null;
  let again = false;

  function currentLeaf() {
    const thread = document.getElementById("thread");
    if (thread) return thread.dataset.leafId || "";
    const input = document.querySelector("#composer input[name=parent_id]");
    return input ? input.value : "";
  }

  function collapsed() {
    const saved = localStorage.getItem(STORE);
    if (saved) return saved === "closed";
    return window.matchMedia("(max-width: 1023px)").matches; // a drawer on small screens
  }

  // --- what a swap must keep -------------------------------------------------------
  function snapshot(skip) {
    const el = panel();
    const state = { open: [], drafts: {}, focus: null, diff: false };
    if (!el) return state;
    el.querySelectorAll("details[id][open]").forEach((d) => {
      if (!skip || !d.contains(skip)) state.open.push(d.id);
    });
    el.querySelectorAll("textarea[id]").forEach((t) => {
      if (t.value !== t.defaultValue && (!skip || !skip.contains(t))) state.drafts[t.id] = t.value;
    });
    const active = document.activeElement;
    if (inPanel(active) && active.id) {
      state.focus = { id: active.id, start: active.selectionStart, end: active.selectionEnd };
    }
    state.diff = !!el.querySelector("#prompt-diff .pp-diff");
    return state;
  }

  function restore(state) {
    const el = panel();
    if (!el) return;
    chrome(el);
    if (!state) return;
    state.open.forEach((id) => { const d = document.getElementById(id); if (d) d.open = true; });
    Object.entries(state.drafts).forEach(([id, value]) => {
      const t = document.getElementById(id);
      if (!t) return;
      t.value = value;
      const d = t.closest("details");
      if (d) d.open = true;
    });
    if (state.focus) {
      const f = document.getElementById(state.focus.id);
      if (f && inPanel(f)) {
        f.focus({ preventScroll: true });
        if (typeof state.focus.start === "number" && f.setSelectionRange) {
          try { f.setSelectionRange(state.focus.start, state.focus.end); } catch (e) { /* not text */ }
        }
      }
    }
    const open = el.querySelector(".pp-refresh-open");
    if (state.diff && open) {
      htmx.ajax("GET", withLeaf(open.getAttribute("hx-get")),
        { target: "#prompt-diff", swap: "innerHTML" });
    }
  }

  // The parts that are the reader's choice, not the server's: collapsed, expanded.
  function chrome(el) {
    const closed = collapsed();
    el.classList.toggle("collapsed", closed);
    const toggle = el.querySelector(".pp-toggle");
    if (toggle) {
      toggle.setAttribute("aria-expanded", String(!closed));
      toggle.textContent = closed ? "Show" : "Hide";
      toggle.setAttribute("aria-label", closed ? "Show the prompt panel" : "Hide the prompt panel");
    }
    const body = el.querySelector(".pp-body");
    if (body) body.hidden = closed;
    const pre = el.querySelector("#frozen-prompt");
    const expand = el.querySelector(".pp-expand");
    if (pre) pre.classList.toggle("expanded", promptExpanded);
    if (expand) {
      expand.setAttribute("aria-expanded", String(promptExpanded));
      expand.textContent = promptExpanded ? "Collapse" : "Expand";
    }
  }

  // --- loading the panel --------------------------------------------------------------
  function withLeaf(url) {
    const leaf = currentLeaf();
    if (!leaf) return url;
    return url + (url.includes("?") ? "&" : "?") + "leaf=" + encodeURIComponent(leaf);
  }

  async function load() {
    if (loading) { again = true; return loading; }
    loading = (async () => {
      const old = panel();
      const response = await fetch(withLeaf(old.dataset.url), { headers: { "HX-Request": "true" } });
      if (!response.ok) return;
      const template = document.createElement("template");
      template.innerHTML = await response.text();
      const fresh = template.content.querySelector("#prompt-panel");
      const current = panel();
      if (!fresh || !current) return;
      const state = snapshot(null);
      current.replaceWith(fresh);
      htmx.process(fresh);
      restore(state);
    })();
    try { await loading; } catch (e) { /* offline: the next event tries again */ } finally {
      loading = null;
      if (again) { again = false; load(); }
    }
    return undefined;
  }

  function schedule(delay) {
    clearTimeout(timer);
    timer = setTimeout(load, delay);
  }

  function followBranch() {
    const el = panel();
    if (el && el.dataset.leafId !== undefined && el.dataset.leafId !== currentLeaf()) schedule(150);
  }

  main.addEventListener("arbor:event", (event) => {
    const type = event.detail && event.detail.type;
    if (NOW.has(type)) schedule(0);
    else if (LATER.has(type)) schedule(400);
    else followBranch();
  });

  // --- the panel's own htmx forms -----------------------------------------------------
  let pending = null;
  document.body.addEventListener("htmx:configRequest", (event) => {
    if (!inPanel(event.detail.elt)) return;
    event.detail.parameters.leaf = currentLeaf();
  });
  document.body.addEventListener("htmx:beforeRequest", (event) => {
    const elt = event.detail.elt;
    if (!inPanel(elt)) return;
    const form = elt.closest("form");
    pending = snapshot(form ? (form.closest("details") || form) : null);
  });
  document.body.addEventListener("htmx:beforeSwap", (event) => {
    // A refused edit (422), a moved prompt (409) or a gone block (404) answers with the
    // panel or diff that says so: show it rather than drop it.
    if (inPanel(event.detail.elt) && [404, 409, 422].includes(event.detail.xhr.status)) {
      event.detail.shouldSwap = true;
      event.detail.isError = false;
    }
  });
  document.body.addEventListener("htmx:afterSettle", (event) => {
    if (event.detail.target && event.detail.target.id === "prompt-panel") {
      const state = pending;
      pending = null;
      restore(state && { ...state, diff: false });
      const error = panel().querySelector("[aria-invalid=true]");
      if (error) error.focus();
    } else if (event.detail.target && event.detail.target.id === "prompt-diff") {
      const diff = event.detail.target.querySelector(".pp-diff");
      if (diff) diff.scrollIntoView({ block: "nearest" });
    } else {
      followBranch();
    }
  });

  document.addEventListener("click", (event) => {
    const target = event.target;
    if (!inPanel(target)) return;
    if (target.closest(".pp-toggle")) {
      localStorage.setItem(STORE, collapsed() ? "open" : "closed");
      chrome(panel());
    } else if (target.closest(".pp-expand")) {
      promptExpanded = !promptExpanded;
      chrome(panel());
    } else if (target.closest(".pp-diff-cancel")) {
      const diff = document.getElementById("prompt-diff");
      if (diff) diff.replaceChildren();
      const open = panel().querySelector(".pp-refresh-open");
      if (open) open.focus();
    }
  });

  // Crossing 1024 px changes the default (a column, or a collapsed section).
  window.matchMedia("(max-width: 1023px)").addEventListener("change", () => {
    if (panel()) chrome(panel());
  });

  load();
})();
