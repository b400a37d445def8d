// The chat's long history: earlier pages load above the reader without moving what
// they are reading, one page per jump (chat.js uses this as Arbor.paging).
//
// "Load earlier messages" loads when it comes into view, but only after it has been out
// of view since it appeared: at scrollTop 0 Chrome applies no scroll anchoring, and a
// trigger that fired whenever visible would load page after page with no further input.
// After each load the page scrolls so the message the reader was looking at stays where
// it was, which puts the next "Load earlier messages" above the screen again.
(function () {
  "use strict";
  const Arbor = (window.Arbor = window.Arbor || {});

  async function fragment(url) {
    const response = await fetch(url, { headers: { "HX-Request": "true" } });
    if (!response.ok) return null;
    const template = document.createElement("template");
    template.innerHTML = await response.text();
    return template.content;
  }

  function headerBottom() {
    const head = document.querySelector(".chat-head");
    return head ? Math.max(0, head.getBoundingClientRect().bottom) : 0;
  }

  // The message or summary marker the reader is looking at: the first whose top is in
  // view below the sticky header, else the first partly in view.
  function anchorRow() {
    const top = headerBottom();
    let partly = null;
    for (const el of document.querySelectorAll("#thread article.message, #thread .summary-marker")) {
      const box = el.getBoundingClientRect();
      if (box.height === 0 || box.bottom <= top) continue;
      if (box.top >= top - 1) return box.top < window.innerHeight ? el : partly || el;
      partly = partly || el;
    }
    return partly;
  }

  // Runs `change` (which adds or replaces content around the reader), then scrolls so
  // the row they were looking at is where it was. `skip`: a part about to go away; when
  // the reader was looking at it, `instead` is kept in place.
  async function keepPlace(change, skip, instead) {
    let el = anchorRow();
    if (el && skip && skip.contains(el)) el = instead || null;
    const id = el && el.id;
    const before = el ? el.getBoundingClientRect().top : 0;
    await change();
    const now = el && el.isConnected ? el : id ? document.getElementById(id) : null;
    if (now) window.scrollBy(0, now.getBoundingClientRect().top - before);
    watch();
  }

  function processAll(nodes) { nodes.forEach((n) => { if (n.nodeType === 1) htmx.process(n); }); }

  // Replaces `button` with the page its data-src names, keeping the reader's place.
  async function loadInto(button) {
    if (button.dataset.loading) return;
    button.dataset.loading = "1";
    const label = button.textContent;
    button.textContent = "Loading…";
    button.setAttribute("aria-busy", "true");
    const content = await fragment(button.dataset.src);
    if (!content) {
      button.textContent = "Could not load them; try again.";
      delete button.dataset.loading;
      button.removeAttribute("aria-busy");
      setTimeout(() => { button.textContent = label; }, 3000);
      return;
    }
    const nodes = Array.from(content.childNodes);
    await keepPlace(() => { button.replaceWith(content); processAll(nodes); });
  }

  // Each "Load earlier messages" is armed once it has been seen off screen.
  const observer = "IntersectionObserver" in window ? new IntersectionObserver((entries) => {
    entries.forEach((entry) => {
      const el = entry.target;
      if (!el.isConnected) { observer.unobserve(el); return; }
      if (!entry.isIntersecting) el.dataset.armed = "1";
      else if (el.dataset.armed) { delete el.dataset.armed; observer.unobserve(el); loadInto(el); }
    });
  }) : null;

  function watch() {
    if (!observer) return;
    document.querySelectorAll("#thread button.older:not([data-watched])").forEach((el) => {
      el.dataset.watched = "1";
      // Off screen now (above the reader, after a load kept their place): armed already,
      // so a jump that comes before the observer's first report still loads.
      const box = el.getBoundingClientRect();
      if (box.bottom < 0 || box.top > window.innerHeight) el.dataset.armed = "1";
      observer.observe(el);
    });
  }

  // A summary marker that is not on the page yet: one request reads from it down to the
  // top of what is loaded; then the marker is scrolled to.
  async function jumpToMarker(compactionId, fromId) {
    let marker = document.getElementById("cm-" + compactionId);
    const older = document.querySelector("#thread button.older");
    if (!marker && older) {
      const url = new URL(older.dataset.src, location.href);
      url.searchParams.set("until", fromId);
      older.dataset.src = url.pathname + url.search;
      await loadInto(older);
      marker = document.getElementById("cm-" + compactionId);
    }
    if (marker) {
      marker.scrollIntoView({ block: "center" });
      const expand = marker.querySelector("button.expand");
      if (expand) expand.focus();
    }
    return marker;
  }

  // Undo this summary, in place: the marker's originals take its place, or when they
  // were never all on the page, "Load earlier messages" reads them from just above.
  async function unwrap(section, leaf, base) {
    const originals = section.querySelector(".originals");
    const whole = originals && !originals.dataset.src && !originals.querySelector("button.older-originals");
    // Looking at the marker: its first original takes its place when they were open,
    // else the message after it stays where it was.
    let instead = whole && !originals.hidden ? originals.querySelector("article.message") : null;
    if (!instead) {
      instead = section.nextElementSibling;
      while (instead && !instead.matches("article.message, section.overlay")) instead = instead.nextElementSibling;
      if (instead && instead.matches("section.overlay")) instead = instead.querySelector(".summary-marker");
    }
    const skip = whole ? section.querySelector(".summary-marker") : section;
    await keepPlace(() => {
      if (whole) {
        const nodes = Array.from(originals.children);
        section.replaceWith(...nodes);
        return;
      }
      let next = section.nextElementSibling;
      while (next && !next.matches("article.message")) next = next.nextElementSibling;
      section.parentElement.querySelectorAll("button.older").forEach((b) => {
        if (b.compareDocumentPosition(section) & Node.DOCUMENT_POSITION_FOLLOWING) b.remove();
      });
      if (!next) { section.remove(); return; }
      const button = document.createElement("button");
      button.type = "button";
      button.className = "older";
      button.textContent = "Load earlier messages";
      button.dataset.src = `${base}older?leaf=${encodeURIComponent(leaf)}&before=${encodeURIComponent(next.dataset.messageId)}`;
      section.replaceWith(button);
    }, skip, instead);
  }

  // Opening a marker reads its last originals; "Show earlier" reads the page before.
  async function openOriginals(originals) {
    if (!originals.dataset.src) return;
    const src = originals.dataset.src;
    delete originals.dataset.src;
    const content = await fragment(src);
    if (!content) { originals.dataset.src = src; return; }
    const nodes = Array.from(content.childNodes);
    originals.replaceChildren(content);
    processAll(nodes);
  }

  document.addEventListener("click", (event) => {
    const button = event.target.closest("button.older, button.older-originals");
    if (button && button.closest("#thread")) loadInto(button);
  });

  Arbor.paging = { fragment, keepPlace, watch, jumpToMarker, unwrap, openOriginals, anchorRow };
})();
