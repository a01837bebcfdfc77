/* The run's header on every view: dataset, harness, machine, command line. */
"use strict";
(function (cb) {
  const el = cb.dom.el;

  function row(label, value, field) {
    return el("div", { class: "fact", data: { field: field } }, [el("dt", {}, label), el("dd", {}, value === null || value === undefined || value === "" ? "–" : String(value))]);
  }

  cb.renderHeader = function (header, overview) {
    const run = overview.run;
    cb.dom.clear(header);
    header.appendChild(el("h1", {}, "codebench: " + run.benchmark));
    // Before any figure: what the figures are over, where it is not every item.
    run.scope.forEach(function (line) { header.appendChild(el("p", { class: "scope", data: { field: "scope" } }, line)); });
    const facts = el("dl", { class: "facts" }, [
      row("dataset", run.dataset_path, "dataset"),
      row("release", run.release, "release"),
      row("sha256", run.sha256, "sha256"),
      row("harness", run.harness_version, "harness"),
      row("started", run.started, "started"),
      row("wall time", run.wall_seconds === null ? null : cb.dom.number(run.wall_seconds, 1) + " s", "wall"),
      row("items", overview.items + " items, " + overview.tasks + " tasks", "items"),
    ]);
    if (run.merged_from.length) facts.appendChild(row("merged from", run.merged_from.join(", "), "merged"));
    header.appendChild(facts);
    const machine = el("dl", { class: "facts machine" });
    run.machine.forEach(function (pair) { machine.appendChild(row(pair[0], pair[1], "machine")); });
    header.appendChild(el("details", { data: { field: "machine" } }, [el("summary", {}, "machine"), machine]));
    header.appendChild(el("details", { data: { field: "command" } }, [
      el("summary", {}, "command line"),
      el("pre", { class: "command" }, run.command),
    ]));
  };
})(window.codebench);
