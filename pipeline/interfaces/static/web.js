// pipeline serve: the only script. It streams the answer into the search page (server-sent events);
// without it the page still links to /answer, which writes the whole answer on the server.
"use strict";
document.addEventListener("DOMContentLoaded", function () {
  var box = document.getElementById("answer");
  if (!box || !box.dataset.stream || !window.EventSource) return;
  var body = box.querySelector(".answer-body");
  if (body.querySelector(".refusal")) { // the search already says the documents hold no answer
    box.dataset.state = "refused";
    return;
  }
  var link = body.querySelector(".nojs");
  var status = document.createElement("p");
  status.className = "status";
  status.textContent = "Piszę odpowiedź…";
  var text = document.createElement("div");
  text.className = "answer-text streaming";
  body.replaceChildren(status, text);
  box.setAttribute("aria-busy", "true");
  var source = new EventSource(box.dataset.stream);
  function finish() {
    source.close();
    box.setAttribute("aria-busy", "false");
  }
  source.addEventListener("token", function (event) {
    text.textContent += JSON.parse(event.data); // text, never markup: the server's "done" brings the links
  });
  source.addEventListener("done", function (event) {
    finish();
    body.innerHTML = JSON.parse(event.data).html; // rendered and escaped by the server's templates
    box.dataset.state = "done";
  });
  source.addEventListener("failure", function (event) {
    finish();
    status.textContent = JSON.parse(event.data).message;
    status.className = "warning";
    box.dataset.state = "failed";
  });
  source.onerror = function () {
    if (box.dataset.state) return;
    finish();
    status.textContent = "Połączenie przerwane. ";
    status.className = "warning";
    if (link) status.appendChild(link.querySelector("a"));
    box.dataset.state = "failed";
  };
});
// "Kopiuj cytowanie": the citation a button carries, to the clipboard (a page without the Clipboard API
// still shows the citation to select).
document.addEventListener("click", function (event) {
  var button = event.target.closest && event.target.closest("button.copy");
  if (!button || !navigator.clipboard) return;
  navigator.clipboard.writeText(button.dataset.copy).then(function () {
    var label = button.textContent;
    button.textContent = "Skopiowano";
    setTimeout(function () { button.textContent = label; }, 1500);
  });
});
