// Site-wide keyboard shortcuts: Ctrl+K (or Cmd+K) search, "?" this help.
(function () {
  "use strict";
  const typing = (el) => el && (el.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(el.tagName));
  document.addEventListener("keydown", (event) => {
    if ((event.ctrlKey || event.metaKey) && event.key.toLowerCase() === "k") {
      const search = document.getElementById("search-q");
      if (search) { event.preventDefault(); search.focus(); search.select(); }
    } else if (event.key === "?" && !typing(document.activeElement)) {
      const help = document.getElementById("shortcuts");
      if (help && !help.open) { event.preventDefault(); help.showModal(); }
    }
  });
  // Behaviour the templates ask for with data- attributes, since the Content-Security-Policy
  // refuses inline handlers (onfocus=, onsubmit=): select a field's text when focused,
  // confirm a form's submission first.
  // data-copy="<id>": copies that field's value (a new API key).
  document.addEventListener("click", async (event) => {
    const button = event.target.closest && event.target.closest("button[data-copy]");
    const field = button && document.getElementById(button.dataset.copy);
    if (!field) return;
    try { await navigator.clipboard.writeText(field.value); } catch { field.select(); document.execCommand("copy"); }
    button.textContent = "Copied";
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });
  document.addEventListener("focusin", (event) => {
    if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
  });
  // Phones: the session list is a drawer; the "Sessions" button, Escape or a click
  // outside closes it again.
  function drawer(open) {
    const nav = document.querySelector(".sidebar");
    const toggle = nav && nav.querySelector(".menu-toggle");
    if (!toggle) return;
    nav.classList.toggle("open", open);
    toggle.setAttribute("aria-expanded", String(open));
    if (open) { const first = nav.querySelector(".sidebar-drawer a, .sidebar-drawer input"); if (first) first.focus(); }
  }
  document.addEventListener("click", (event) => {
    const toggle = event.target.closest(".menu-toggle");
    const nav = document.querySelector(".sidebar");
    if (toggle) drawer(toggle.getAttribute("aria-expanded") !== "true");
    else if (nav && nav.classList.contains("open") && !event.target.closest(".sidebar-drawer")) drawer(false);
  });
  document.addEventListener("keydown", (event) => {
    const nav = document.querySelector(".sidebar.open");
    if (event.key === "Escape" && nav) { drawer(false); nav.querySelector(".menu-toggle").focus(); }
  });
  document.addEventListener("submit", (event) => {
    const message = event.target.dataset && event.target.dataset.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
