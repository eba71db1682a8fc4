// krait's HTML report: a click on any element carrying data-txn shows that transaction in the
// details pane. Text is set with textContent only: names and values come from the history.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("krait-data").textContent);
  var pane = document.getElementById("details");

  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function ref(name) {
    var b = el("button", name, "ref");
    b.setAttribute("data-txn", name);
    return b;
  }

  function show(name) {
    document.querySelectorAll(".selected").forEach(function (e) { e.classList.remove("selected"); });
    document.querySelectorAll("[data-txn]").forEach(function (e) {
      if (e.getAttribute("data-txn") === name) e.classList.add("selected");
    });
    pane.replaceChildren();
    var d = data.txns[name];
    if (!d) {
      pane.appendChild(el("h3", name));
      pane.appendChild(el("p", "Not named by any anomaly and no neighbour of one: this report does not carry it.", "hint"));
      return;
    }
    pane.appendChild(el("h3", d.name));
    var dl = el("dl");
    function row(k, v) {
      if (v === null || v === undefined) return;
      dl.appendChild(el("dt", k));
      var dd = el("dd");
      if (v instanceof Node) dd.appendChild(v); else dd.textContent = String(v);
      dl.appendChild(dd);
    }
    row("session", d.session);
    row("position", d.position);
    row("status", d.status);
    row("start", d.start);
    row("commit", d.commit);
    row("previous", d.prev ? ref(d.prev) : "none (first of its session)");
    row("next", d.next ? ref(d.next) : "none (last of its session)");
    pane.appendChild(dl);
    pane.appendChild(el("p", d.in_certificate ? "Operations (reads with the writer they read from):" : "Operations:", "hint"));
    var ol = el("ol", null, "ops");
    d.ops.forEach(function (op) { ol.appendChild(el("li", op)); });
    pane.appendChild(ol);
    if (d.more_ops > 0) pane.appendChild(el("p", "… and " + d.more_ops + " more operations", "hint"));
  }

  // report.html#txn=T7 opens with T7 shown: a link to one transaction of the report.
  if (location.hash.indexOf("#txn=") === 0) show(decodeURIComponent(location.hash.slice(5)));

  document.addEventListener("click", function (ev) {
    var t = ev.target.closest ? ev.target.closest("[data-txn]") : null;
    if (t) show(t.getAttribute("data-txn"));
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key !== "Enter" && ev.key !== " ") return;
    var t = ev.target.closest ? ev.target.closest("[data-txn]") : null;
    if (t) { ev.preventDefault(); show(t.getAttribute("data-txn")); }
  });
})();
