// The Import page: drop a file on the zone, and watch the upload's progress (htmx
// reports it; the summary or the refusal then replaces #import-result).
(function () {
  "use strict";
  function setup() {
    var form = document.querySelector(".import-form");
    if (!form) return;
    var zone = form.querySelector("[data-drop-zone]");
    var input = form.querySelector("input[type=file]");
    var bar = form.querySelector(".import-progress");
    var status = form.querySelector(".import-status");
    ["dragenter", "dragover"].forEach(function (name) {
      zone.addEventListener(name, function (e) { e.preventDefault(); zone.classList.add("over"); });
    });
    ["dragleave", "drop"].forEach(function (name) {
      zone.addEventListener(name, function () { zone.classList.remove("over"); });
    });
    zone.addEventListener("drop", function (e) {
      e.preventDefault();
      if (e.dataTransfer && e.dataTransfer.files.length) {
        input.files = e.dataTransfer.files;
        status.textContent = input.files[0].name + " ready";
      }
    });
    input.addEventListener("change", function () {
      status.textContent = input.files.length ? input.files[0].name + " ready" : "";
    });
    form.addEventListener("htmx:xhr:progress", function (e) {
      if (!e.detail.lengthComputable) return;
      var share = Math.round(e.detail.loaded / e.detail.total * 100);
      bar.hidden = false;
      bar.value = share;
      status.textContent = share < 100 ? "Uploading… " + share + "%" : "Importing…";
    });
    form.addEventListener("htmx:afterRequest", function () {
      bar.hidden = true;
      status.textContent = "";
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", setup);
  else setup();
})();
