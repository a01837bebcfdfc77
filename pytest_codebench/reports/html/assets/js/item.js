/* #/item/<node id> : one item's verdict, figures, solution and logs, from its data file. */
"use strict";
(function (cb) {
  const el = cb.dom.el;

  function field(name, label, value) {
    const text = value === null || value === undefined || value === "" ? "–" : String(value);
    return el("div", { class: "fact" }, [el("dt", {}, label), el("dd", { data: { field: name } }, text)]);
  }

  // A float to six significant digits (the JSON report keeps it whole); anything else as it is.
  function shown(value) {
    return typeof value === "number" && !Number.isInteger(value) ? String(Number(value.toPrecision(6))) : String(value);
  }

  function figures(item) {
    const names = Object.keys(item.figures).sort();
    const rows = names.map(function (name) {
      return el("tr", { data: { figure: name } }, [el("th", { scope: "row" }, name), el("td", {}, shown(item.figures[name]))]);
    });
    return el("div", { data: { field: "figures" } }, names.length ? el("table", { class: "figures" }, el("tbody", {}, rows)) : el("p", {}, "no figures"));
  }

  // The speedup with its interval and each step's seconds, as a person reads them.
  function timings(figures) {
    const parts = [];
    if (typeof figures.speedup === "number") {
      const bounds = typeof figures.ci_low === "number" && typeof figures.ci_high === "number" ?
        " [" + cb.dom.number(figures.ci_low) + ", " + cb.dom.number(figures.ci_high) + "]" : "";
      parts.push("speedup " + cb.dom.number(figures.speedup) + "x" + bounds);
    }
    Object.keys(figures).sort().forEach(function (name) {
      if (/_seconds$/.test(name) && typeof figures[name] === "number") {
        parts.push(name.replace(/_seconds$/, "") + " " + cb.dom.number(figures[name]) + " s");
      }
    });
    return parts.join("; ");
  }

  function isDiff(text) {
    return /^(diff --git |--- |Index: )/m.test(text.slice(0, 2000));
  }

  // A patch's lines coloured by their first character: still text nodes only.
  function diffLines(pre, text) {
    text.split("\n").forEach(function (line, i) {
      const kind = line[0] === "+" ? "add" : line[0] === "-" ? "del" : line[0] === "@" ? "hunk" : "ctx";
      pre.appendChild(el("span", { class: "line " + kind }, (i ? "\n" : "") + line));
    });
    return pre;
  }

  function solution(item) {
    const box = el("div", { data: { field: "solution" } });
    if (!item.solution) {
      box.appendChild(el("p", { class: "empty" }, "This report does not carry the solution; its logs below show what ran."));
      return box;
    }
    item.solution.forEach(function (file) {
      if (file.path) box.appendChild(el("h4", { class: "path" }, file.path));
      const pre = el("pre", { class: isDiff(file.text) ? "solution diff" : "solution", data: { path: file.path } });
      if (isDiff(file.text)) diffLines(pre, file.text); else pre.textContent = file.text;
      box.appendChild(pre);
    });
    return box;
  }

  function logs(item) {
    const box = el("div", { data: { field: "logs" } });
    if (!item.logs.length) box.appendChild(el("p", { class: "empty" }, "no logs"));
    item.logs.forEach(function (log) {
      box.appendChild(el("h4", {}, log.name));
      if (log.text === null) {
        box.appendChild(el("p", { class: "missing", data: { log: log.name } }, "log not found at " + log.path));
        return;
      }
      if (log.whole) box.appendChild(el("p", {}, ["cut to fit the page: ", el("a", { class: "whole-log", href: log.whole, data: { log: log.name } }, "the whole log")]));
      box.appendChild(el("pre", { class: "log", data: { log: log.name } }, log.text));
    });
    return box;
  }

  function render(view, item) {
    // The run's own command line and this item's node id, quoted as Python's shlex.quote does.
    const quoted = "'" + item.nodeid.replace(/'/g, "'\"'\"'") + "'";
    const rerun = cb.data.overview.run.rerun ? cb.data.overview.run.rerun + " " + quoted : "pytest " + quoted;
    const section = el("section", { id: "item", data: { outcome: item.outcome } }, [
      el("h2", {}, item.id || item.nodeid),
      el("dl", { class: "facts" }, [
        field("outcome", "outcome", item.outcome),
        field("status", "pytest status", item.status),
        field("reason", "reason", item.reason),
        field("nodeid", "node id", item.nodeid),
        field("rerun", "rerun", rerun),
        field("model", "model", item.model),
        field("group", "group", item.group),
        field("excused", "scored", item.excused ? "no (the machine's doing)" : "yes"),
        field("reuse", "verdict from", item.cached ? "the verdict store" : item.same_as ? "the duplicate " + item.same_as : "its own grading"),
        field("command", "command", item.command),
        field("exit_code", "exit code", item.exit_code),
        field("started", "started", item.started),
        field("wall_seconds", "wall time (s)", item.wall_seconds),
        field("timings", "timings", timings(item.figures)),
      ]),
      el("h3", {}, "Figures"), figures(item),
      el("h3", {}, "Solution"), solution(item),
    ]);
    if (item.output_tail) section.appendChild(el("h3", {}, "Output (tail)"));
    if (item.output_tail) section.appendChild(el("pre", { class: "output-tail" }, item.output_tail));
    section.appendChild(el("h3", {}, "Logs"));
    section.appendChild(logs(item));
    view.appendChild(section);
  }

  cb.views.item = function (view, overview, nodeid) {
    const name = "items/" + cb.shardOf(nodeid, overview.item_files);
    return cb.need([name]).then(function (results) {
      const item = results[0][nodeid];
      if (!item) {
        view.appendChild(el("p", { id: "not-found" }, "No item " + nodeid + " in this report."));
        return;
      }
      view.appendChild(el("p", {}, el("a", { href: "#/problems?q=" + encodeURIComponent(item.task_id) }, "← " + item.task_id + " in the matrix")));
      render(view, item);
    });
  };
})(window.codebench);
