// The chat view, live (SPEC §10-11). The page is server-rendered; this file keeps it in
// step with the session's live events and wires the per-message actions.
//
// Events arrive over the htmx ws extension's socket as JSON (agents read the same
// frames). Each is handled in order (a promise chain), because handling may fetch a
// server-rendered fragment. Stored text only ever becomes markup through those
// fragments; streamed deltas are added as text.
(function () {
  "use strict";

  const main = document.querySelector("main.chat");
  if (!main) return;
  const sessionId = main.dataset.sessionId;
  const base = main.dataset.url; // /sessions/<id>/
  const composer = document.getElementById("composer");
  const input = document.getElementById("message-input");
  let seq = Number(main.dataset.seq || 0);
  let socket = null;
  let queue = Promise.resolve();

  const thread = () => document.getElementById("thread");
  const leafId = () => thread().dataset.leafId || "";
  const article = (id) => document.getElementById("m-" + id);

  function setLeaf(id, { push = false } = {}) {
    thread().dataset.leafId = id || "";
    composer.querySelector("input[name=parent_id]").value = id || "";
    const url = id ? `${base}?leaf=${encodeURIComponent(id)}` : base;
    if (push) history.pushState({}, "", url);
    else history.replaceState({}, "", url + location.hash);
    const empty = document.getElementById("thread-empty");
    if (empty && id) empty.remove();
    rememberLeaf(id);
  }

  // The server keeps the leaf on screen as this person's place in the session (the
  // sidebar reopens it). It finds the newest leaf under it, so a branch that only grew
  // needs no word; one that moved (a new branch, an earlier message) does.
  let placeKept = leafId();
  let placeTimer = null;
  function rememberLeaf(id) {
    const kept = placeKept && article(placeKept);
    if (!id || id === placeKept || (kept && thread().contains(kept))) return;
    clearTimeout(placeTimer);
    placeTimer = setTimeout(() => {
      const body = new URLSearchParams({ leaf: id });
      const token = composer.querySelector("input[name=csrfmiddlewaretoken]").value;
      fetch(`${base}shown`, { method: "POST", body, headers: { "X-CSRFToken": token } })
        .then((r) => { if (r.ok) placeKept = id; }).catch(() => {});
    }, 400);
  }

  // --- status -------------------------------------------------------------------
  const STATUS_TEXT = { thinking: "thinking…", compacting: "compacting…", error: "error" };
  function setStatus(status) {
    const was = main.dataset.sessionStatus;
    if (was !== status && status === "thinking") ui.announce("The assistant is answering…");
    else if (was === "thinking" && status === "idle") ui.announce("The answer is complete.");
    else if (was !== status && status === "error") ui.announce("The turn failed.");
    main.dataset.sessionStatus = status;
    main.querySelector(".status-text").textContent = STATUS_TEXT[status] || "";
    const busy = status === "thinking" || status === "compacting";
    main.querySelectorAll("[data-busy-off], .composer .send").forEach((b) => { b.disabled = busy; });
    if (!busy) {
      // The turn is over: the streamed text becomes the stored, rendered message.
      document.querySelectorAll("article.streaming").forEach((el) => refresh(el.dataset.messageId));
    }
  }

  // --- fragments ----------------------------------------------------------------
  const paging = window.Arbor.paging;
  const ui = window.Arbor.ui;
  const toggleEdit = ui.toggleEdit;
  // A live message event may carry its message as the server renders it for this page
  // (frame.html: the same sanitised fragment, rendered once for every tab): used instead
  // of fetching it. Frames replayed on resume carry none: then it is fetched.
  let carried = null; // the frame being handled
  async function fragment(url) {
    const m = carried && typeof carried.html === "string" && (carried.data || {}).message;
    if (!(m && url === `${base}messages/${encodeURIComponent(m.id)}/`)) return paging.fragment(url);
    const template = document.createElement("template");
    template.innerHTML = carried.html;
    return template.content;
  }

  function place(content, replace) {
    const nodes = Array.from(content.children);
    if (replace) replace.replaceWith(content);
    else thread().append(content);
    nodes.forEach((n) => htmx.process(n));
    return nodes[0];
  }

  async function refresh(id) {
    const content = await fragment(`${base}messages/${encodeURIComponent(id)}/`);
    const old = article(id);
    if (!content || !old) return;
    // Someone editing this message keeps their open editor and what they typed.
    const form = old.querySelector(".edit-form");
    const editing = form && !form.hidden ? form.querySelector("textarea") : null;
    const draft = editing && { value: editing.value, focused: document.activeElement === editing };
    // The final render (Markdown, the action row) is taller than the streamed text: a
    // reader at the bottom stays there.
    const atBottom = nearBottom();
    place(content, old);
    if (atBottom) scrollToBottom();
    const fresh = article(id);
    if (draft && fresh && fresh.querySelector(".edit-form")) {
      toggleEdit(fresh, true);
      const area = fresh.querySelector(".edit-form textarea");
      area.value = draft.value;
      if (!draft.focused) area.blur();
    }
  }

  async function appendMessage(id) {
    const atBottom = nearBottom();
    const content = await fragment(`${base}messages/${encodeURIComponent(id)}/`);
    if (!content || article(id)) return;
    place(content);
    setLeaf(id);
    if (atBottom) scrollToBottom();
  }

  // The branch re-read, keeping the reader's place (or the bottom, if they were there).
  async function reloadThread() {
    const leaf = leafId();
    const atBottom = nearBottom();
    await paging.keepPlace(() => htmx.ajax("GET", leaf ? `${base}?leaf=${encodeURIComponent(leaf)}` : base,
      { target: "#thread", select: "#thread", swap: "outerHTML" }));
    if (atBottom) scrollToBottom();
  }

  // The message on screen whose parent is `parentId` (a root for ""), to refresh its
  // branch counter when a sibling appears elsewhere.
  function shownChildOf(parentId) {
    return Array.from(thread().querySelectorAll("article.message"))
      .find((el) => (el.dataset.parentId || "") === (parentId || ""));
  }

  // --- streaming ----------------------------------------------------------------
  function streamInto(data) {
    let el = article(data.message_id);
    if (!el) {
      if ((data.parent_id || "") !== leafId()) return; // an answer on another branch
      el = document.createElement("article");
      el.id = "m-" + data.message_id;
      el.className = "message role-assistant streaming";
      el.dataset.messageId = data.message_id;
      el.dataset.role = "assistant";
      el.dataset.parentId = data.parent_id || "";
      const header = document.createElement("header");
      const role = document.createElement("span");
      role.className = "role";
      role.textContent = "Assistant";
      header.append(role);
      const content = document.createElement("div");
      content.className = "content";
      const text = document.createElement("p");
      text.className = "stream";
      content.append(text);
      el.append(header, content);
      thread().append(el);
      setLeaf(data.message_id);
    }
    el.classList.add("streaming");
    const atBottom = nearBottom();
    let text = el.querySelector(".stream");
    if (!text) {
      text = document.createElement("p");
      text.className = "stream";
      el.querySelector(".content").replaceChildren(text);
    }
    text.textContent += data.text;
    if (atBottom) scrollToBottom();
  }

  // --- events -------------------------------------------------------------------
  async function handle(frame) {
    if (typeof frame.seq === "number") {
      if (frame.seq <= seq) return; // already on the page
      seq = frame.seq;
    }
    const data = frame.data || {};
    // Other parts of the page (e.g. the prompt panel) follow the same events.
    main.dispatchEvent(new CustomEvent("arbor:event", { detail: frame }));
    ui.describe(frame, sessionId);
    switch (frame.type) {
      case "resync":
        seq = 0;
        await reloadThread();
        break;
      case "message.delta":
        streamInto(data);
        break;
      case "message.appended": {
        const m = data.message;
        const el = article(m.id);
        if (el) {
          if (!el.classList.contains("streaming")) await refresh(m.id);
        } else if ((data.parent_id || "") === leafId()) {
          await appendMessage(m.id);
        } else {
          const sibling = shownChildOf(data.parent_id);
          if (sibling) await refresh(sibling.dataset.messageId); // its counter grew
        }
        break;
      }
      case "message.updated":
        if (article(data.message.id) && !article(data.message.id).classList.contains("streaming")) {
          await refresh(data.message.id);
        }
        break;
      case "messages.deleted": {
        const ids = data.ids || [];
        if (data.all || ids.some((id) => article(id))) {
          if (data.all || ids.includes(leafId())) setLeaf("");
          await reloadThread();
        }
        break;
      }
      case "compaction.started":
        banner("Compacting… the older messages are being summarised.", { quiet: true });
        break;
      case "compaction.completed":
        if (!data.compaction) banner("Nothing to summarise yet: the history is still short.", { quiet: true });
        else { await reloadThread(); await compacted(data.compaction); }
        break;
      case "compaction.removed": {
        const section = document.getElementById("c-" + data.compaction_id);
        if (section) await paging.unwrap(section, leafId(), base);
        break;
      }
      case "compaction.failed":
        banner(`Compaction failed: ${data.error || "the summariser gave no answer"}. Nothing was changed.`);
        break;
      case "session.status":
        statusSeq = frame.seq || statusSeq;
        setStatus(data.status);
        break;
      case "session.renamed":
        document.getElementById("session-name").textContent = data.name || "Untitled";
        document.title = `${data.name || "Untitled"} · Arbor`;
        break;
      case "session.deleted":
        banner("This session was deleted elsewhere. Its messages are gone.");
        composer.querySelectorAll("textarea, button").forEach((c) => { c.disabled = true; });
        break;
      case "error":
        if (frame.code === "not_found") banner("This session is not available any more.");
        break;
    }
  }

  const banner = ui.banner;
  const compacted = (overlay) => ui.compacted(base, overlay);

  main.addEventListener("htmx:wsOpen", (event) => {
    socket = event.detail.socketWrapper;
    // After a reconnect too: everything after the last seq this page has, in order.
    socket.send(JSON.stringify({ action: "resume", after_seq: seq }));
  });
  main.addEventListener("htmx:wsBeforeMessage", (event) => {
    event.preventDefault(); // JSON events, not HTML to swap
    let frame;
    try { frame = JSON.parse(event.detail.message); } catch { return; }
    queue = queue.then(() => handle((carried = frame))).catch((e) => console.warn("live event", e));
  });

  // --- scrolling ----------------------------------------------------------------
  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 80;
  }
  function scrollToBottom() { window.scrollTo(0, document.body.scrollHeight); }

  // --- actions ------------------------------------------------------------------
  function switchBranch(button) {
    const target = button.dataset.target;
    if (!target) return;
    const old = button.closest("article");
    const offset = old.getBoundingClientRect().top;
    const url = `${base}?leaf=${encodeURIComponent(target)}`;
    htmx.ajax("GET", url, { target: "#thread", select: "#thread", swap: "outerHTML" }).then(() => {
      history.pushState({}, "", url);
      placeKept = thread().dataset.leafId; // the page's read kept it
      const now = article(target);
      if (now) {
        window.scrollBy(0, now.getBoundingClientRect().top - offset); // keep it in place
        const same = now.querySelector(button.classList.contains("branch-prev") ? ".branch-prev" : ".branch-next");
        (same && !same.disabled ? same : now).focus();
      }
      setLeaf(thread().dataset.leafId);
    });
  }

  // Regenerate / send as new branch: the page moves to the branch being made, at the
  // fork (everything below it is another branch now), and follows the new answer.
  let leafBeforeCut = null; // to go back to when the action that cut is refused
  function cutAt(parentId) {
    leafBeforeCut = leafId();
    const all = Array.from(thread().querySelectorAll("article.message"));
    const at = parentId ? all.findIndex((el) => el.dataset.messageId === parentId) : -1;
    all.slice(at + 1).forEach((el) => el.remove());
    setLeaf(parentId);
  }

  thread().parentElement.addEventListener("click", (event) => {
    const button = event.target.closest("button");
    if (!button || !thread().contains(button)) return;
    const el = button.closest("article");
    if (button.matches(".expand")) {
      const originals = document.getElementById(button.getAttribute("aria-controls"));
      const open = button.getAttribute("aria-expanded") !== "true";
      if (open) paging.openOriginals(originals); // read when first opened
      originals.hidden = !open;
      button.setAttribute("aria-expanded", String(open));
      return;
    }
    if (button.matches(".branch-prev, .branch-next")) switchBranch(button);
    else if (button.matches(".copy")) ui.copyText(el.querySelector(".content").innerText, button);
    else if (button.matches(".edit")) toggleEdit(el, true);
    else if (button.matches(".cancel")) toggleEdit(el, false);
  });

  document.body.addEventListener("htmx:beforeRequest", (event) => {
    const elt = event.detail.elt;
    if (elt.matches && elt.matches(".compact-now")) {
      banner("Compacting… the older messages are being summarised.", { quiet: true });
    }
    const el = elt.closest && elt.closest("article.message");
    if (!el) return;
    if (elt.matches(".regenerate")) cutAt(el.dataset.parentId);
    else if (elt.matches(".edit-form .branch")) cutAt(el.dataset.parentId);
  });

  // An action that starts a turn: the page shows it at once (the server's own status
  // event follows; one that already arrived is newer and wins).
  const STARTS = { ".regenerate": "thinking", ".edit-form .branch": "thinking", ".compact-now": "compacting" };
  let statusSeq = 0;
  let seqAtRequest = 0;
  document.body.addEventListener("htmx:beforeSend", () => { seqAtRequest = seq; });

  document.body.addEventListener("htmx:afterRequest", (event) => {
    const elt = event.detail.elt;
    const xhr = event.detail.xhr;
    const error = composer.querySelector(".composer-error");
    if (event.detail.successful && xhr && xhr.status === 202 && statusSeq <= seqAtRequest) {
      const started = elt === composer ? "thinking"
        : Object.entries(STARTS).find(([sel]) => elt.matches && elt.matches(sel));
      if (started) setStatus(typeof started === "string" ? started : started[1]);
    }
    if (elt === composer && event.detail.successful) { input.value = ""; error.hidden = true; }
    if (!event.detail.successful && xhr && xhr.status >= 400 && main.contains(elt)) {
      error.textContent = xhr.responseText || "That did not work; try again.";
      error.hidden = false;
      if (leafBeforeCut !== null) { setLeaf(leafBeforeCut); leafBeforeCut = null; reloadThread(); }
      else if (xhr.status === 409 || xhr.status === 404) reloadThread();
    } else if (event.detail.successful) {
      leafBeforeCut = null;
    }
  });

  // --- keyboard -----------------------------------------------------------------
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      if (!composer.querySelector(".send").disabled && input.value.trim()) composer.requestSubmit();
    }
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && main.dataset.sessionStatus === "thinking") {
      composer.querySelector(".stop").click();
    }
    if (event.altKey && (event.key === "ArrowLeft" || event.key === "ArrowRight")) {
      const el = document.activeElement && document.activeElement.closest("article.message");
      if (!el) return;
      const button = el.querySelector(event.key === "ArrowLeft" ? ".branch-prev" : ".branch-next");
      if (button && !button.disabled) { event.preventDefault(); switchBranch(button); }
    }
  });

  // --- start --------------------------------------------------------------------
  setStatus(main.dataset.sessionStatus);
  paging.watch();
  if (!location.hash) scrollToBottom();
  else {
    const target = document.getElementById(location.hash.slice(1));
    if (target) { target.scrollIntoView({ block: "center" }); target.classList.add("highlight"); target.focus(); }
  }
  window.addEventListener("popstate", () => location.reload());
})();
