/* #/ : the leaderboard, the per-group table, the outcome chart and the models compared. */
"use strict";
(function (cb) {
  const el = cb.dom.el;
  const GROUPS_PAGE = 100;

  function unique(lists) {
    const seen = [];
    lists.forEach(function (list) { list.forEach(function (name) { if (seen.indexOf(name) < 0) seen.push(name); }); });
    return seen;
  }

  function valueCell(name, metric) {
    if (!metric || metric.value === null || metric.value === undefined) return el("td", { data: { metric: name } }, "–");
    return el("td", { data: { metric: name, value: metric.value, low: metric.low, high: metric.high } }, cb.dom.figure(metric));
  }

  function countCell(name, value) {
    return el("td", { class: "count", data: { metric: name, value: value } }, String(value));
  }

  // Not a figure of the report's models (no data-metric): items, excused, problems not graded here.
  function tallyCell(name, value) {
    return el("td", { class: "count", data: { tally: name, value: value } }, String(value));
  }

  function leaderboard(overview) {
    const rows = overview.leaderboard;
    const metrics = unique(rows.map(function (row) { return row.metrics.map(function (m) { return m.name; }); }));
    const counted = overview.outcomes.filter(function (name) { return rows.some(function (row) { return row.counts[name]; }); });
    const head = el("tr", {}, [el("th", {}, "model")]
      .concat(metrics.map(function (name) { return el("th", {}, name); }))
      .concat(counted.map(function (name) { return el("th", { class: "count" }, name.replace(/_/g, " ")); }))
      .concat([el("th", {}, "items"), el("th", { title: "skips and errors that are the machine's doing, out of the score" }, "excused"),
        el("th", { title: "problems this machine could not grade at all" }, "could not grade here")]));
    const body = rows.map(function (row) {
      const byName = {};
      row.metrics.forEach(function (metric) { byName[metric.name] = metric; });
      const label = [cb.dom.modelLabel(row.model)]
        .concat(row.no_score ? [el("div", { class: "no-score", data: { field: "no-score" } }, "no score here: " + row.no_score)] : []);
      return el("tr", { data: { model: row.model } }, [el("th", { scope: "row" }, label)]
        .concat(metrics.map(function (name) { return valueCell(name, byName[name]); }))
        .concat(counted.map(function (name) { return countCell("count:" + name, row.counts[name] || 0); }))
        .concat([tallyCell("items", row.items), tallyCell("excused", row.excused), tallyCell("not-graded", row.not_graded)]));
    });
    return el("table", { id: "leaderboard" }, [el("thead", {}, head), el("tbody", {}, body)]);
  }

  // A group's cells: [value, low, high] per model, in the order of overview.models.
  function groupRow(overview, row) {
    const metric = overview.groups.metric;
    return el("tr", { data: { group: row.group } }, [el("th", { scope: "row" }, el("a", { href: "#/problems?group=" + encodeURIComponent(row.group) }, row.group))]
      .concat(row.cells.map(function (cell, i) {
        const shown = cb.dom.figure({ value: cell[0], low: cell[1], high: cell[2], unit: "%" });
        return el("td", { data: { model: overview.models[i], metric: metric, value: cell[0], low: cell[1], high: cell[2] } }, shown);
      })));
  }

  // Groups a page at a time: PIE's groups are its problems, thousands in a large run.
  function groups(overview) {
    const table = overview.groups;
    const head = el("tr", {}, [el("th", {}, "group")].concat(overview.models.map(function (name) { return el("th", {}, cb.dom.modelLabel(name)); })));
    const body = el("tbody");
    const last = Math.max(0, Math.ceil(table.rows.length / GROUPS_PAGE) - 1);
    const pages = el("span", { class: "pages" });
    let page = 0;
    function show() {
      cb.dom.clear(body);
      table.rows.slice(page * GROUPS_PAGE, (page + 1) * GROUPS_PAGE).forEach(function (row) { body.appendChild(groupRow(overview, row)); });
      cb.dom.clear(pages);
      if (!last) return;
      cb.dom.add(pages, [
        el("button", { id: "groups-prev", type: "button", on: { click: function () { page -= 1; show(); } } }, "‹"),
        " groups page " + (page + 1) + " of " + (last + 1) + " ",
        el("button", { id: "groups-next", type: "button", on: { click: function () { page += 1; show(); } } }, "›"),
      ]);
      pages.firstChild.disabled = page === 0;
      pages.lastChild.disabled = page === last;
    }
    show();
    return el("div", {}, [el("p", { class: "controls" }, pages), el("table", { id: "groups" }, [el("caption", {}, table.metric + " per group"), el("thead", {}, head), body])]);
  }

  function interval(figure, scale, unit) {
    if (!figure) return "–";
    const digits = function (x) { return cb.dom.number(x * scale); };
    const bounds = figure.low === null ? "" : " [" + digits(figure.low) + ", " + digits(figure.high) + "]";
    return digits(figure.estimate) + unit + bounds + " (" + figure.reading + ")";
  }

  function comparisons(overview) {
    // The shares the benchmark compares (pass@1; PIE's %Correct@1 and %Optimized(1.10)@1): one benchmark's, the same in every pair.
    const names = Object.keys(overview.comparisons[0].differences || {});
    const rows = overview.comparisons.map(function (pair) {
      const shares = names.map(function (name) {
        return el("td", { data: { metric: name + " difference" } }, interval((pair.differences || {})[name], 100, " pp"));
      });
      return el("tr", { data: { a: pair.a, b: pair.b } }, [el("td", {}, pair.a), el("td", {}, pair.b)].concat(shares, [
        el("td", { data: { metric: "speedup ratio" } }, interval(pair.speedup_ratio, 1, "x")),
      ]));
    });
    const titles = ["A", "B"].concat(names.map(function (name) { return name + ", A − B"; }), ["geomean speedup, A / B"]);
    const head = el("tr", {}, titles.map(function (text) { return el("th", {}, text); }));
    return el("table", { id: "comparisons" }, [el("caption", {}, "models compared (paired, 95% intervals)"), el("thead", {}, head), el("tbody", {}, rows)]);
  }

  cb.views.overview = function (view, overview) {
    view.appendChild(el("h2", {}, "Leaderboard"));
    view.appendChild(el("div", { class: "scroll" }, leaderboard(overview)));
    const chart = cb.charts.figure("outcomes-chart", "outcomes per model (items)");
    chart.node.querySelector(".canvas").style.height = Math.max(160, 40 + 34 * overview.leaderboard.length) + "px";
    view.appendChild(chart.node);
    cb.charts.outcomes(chart.canvas, overview.leaderboard, overview.outcomes);
    if (overview.comparisons.length) view.appendChild(el("div", { class: "scroll" }, comparisons(overview)));
    if (overview.groups.rows.length) {
      view.appendChild(el("h2", {}, "Groups"));
      view.appendChild(el("div", { class: "scroll" }, groups(overview)));
    }
    return Promise.resolve();
  };
})(window.codebench);
