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
  document.addEventListener("focusin", (event) => {
    if (event.target.matches && event.target.matches("[data-select-on-focus]")) event.target.select();
  });
  document.addEventListener("submit", (event) => {
    const message = event.target.dataset && event.target.dataset.confirm;
    if (message && !window.confirm(message)) event.preventDefault();
  });
})();
