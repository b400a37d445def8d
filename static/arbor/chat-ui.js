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

  Arbor.ui = { copyText, toggleEdit };
})();
