/* #/problems : the task x model matrix, filtered by text, group and outcome (kept in the hash's
   query), a page of rows at a time; the count covers every page. */
"use strict";
(function (cb) {
  const el = cb.dom.el;
  const PAGE = 100;

  function matrixNames(overview) {
    const names = [];
    for (let i = 0; i < overview.matrix_files; i++) names.push("matrix-" + i);
    return names;
  }

  function nodeidOf(overview, row, slot) {
    if (row[3] && row[3][slot]) return row[3][slot];
    const model = overview.slots[slot][0] >= 0 ? overview.models[overview.slots[slot][0]] : "";
    return overview.prefix + row[0] + "[" + (model ? model + ":" : "") + overview.slots[slot][1] + "]";
  }

  function headRow(overview) {
    const samples = {};
    overview.slots.forEach(function (slot) { samples[slot[0]] = (samples[slot[0]] || 0) + 1; });
    return el("tr", {}, [el("th", {}, "task"), el("th", {}, "group")].concat(overview.slots.map(function (slot) {
      const name = slot[0] >= 0 ? cb.dom.modelLabel(overview.models[slot[0]]) : "(no model)";
      return el("th", { data: { model: slot[0] >= 0 ? overview.models[slot[0]] : null } }, samples[slot[0]] > 1 ? name + " #" + slot[1] : name);
    })));
  }

  function rowNode(overview, row, groups) {
    const cells = [el("th", { scope: "row" }, row[0]), el("td", { class: "group" }, row[1] >= 0 ? groups[row[1]] : "")];
    for (let slot = 0; slot < overview.slots.length; slot++) {
      const code = row[2][slot];
      const outcome = overview.outcomes[overview.codes.indexOf(code)];
      if (!outcome) { cells.push(el("td", { class: "absent" })); continue; }
      const nodeid = nodeidOf(overview, row, slot);
      const link = el("a", { href: cb.dom.itemHref(nodeid), title: outcome + ": " + nodeid }, outcome === "passed" ? "✓" : "✗");
      const cell = el("td", { class: "cell", data: { item: nodeid, outcome: outcome } }, link);
      cell.style.background = cb.charts.colour(outcome);
      cells.push(cell);
    }
    return el("tr", { data: { task: row[0] } }, cells);
  }

  function matches(filter, row, groups) {
    if (filter.q && row[0].toLowerCase().indexOf(filter.q) < 0) return false;
    if (filter.group && (row[1] < 0 || groups[row[1]] !== filter.group)) return false;
    if (filter.code && row[2].indexOf(filter.code) < 0) return false;
    return true;
  }

  // The colour of each outcome some model has.
  function legend(overview) {
    const shown = overview.outcomes.filter(function (name) {
      return overview.leaderboard.some(function (row) { return row.counts[name]; });
    });
    return el("p", { class: "legend" }, shown.map(function (name) {
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = cb.charts.colour(name);
      return el("span", { class: "key" }, [swatch, " " + name]);
    }));
  }

  function select(id, label, values, chosen) {
    const options = [el("option", { value: "" }, label)].concat(values.map(function (value) {
      const option = el("option", { value: value }, value);
      option.selected = value === chosen;
      return option;
    }));
    return el("select", { id: id }, options);
  }

  cb.views.problems = function (view, overview, params, route) {
    return cb.need(matrixNames(overview)).then(function (chunks) {
      const rows = [].concat.apply([], chunks.map(function (chunk) { return chunk.rows; }));
      const groups = chunks.length ? chunks[0].groups : [];
      const text = el("input", { id: "filter-text", type: "search", placeholder: "task id contains…", value: params.get("q") || "" });
      const group = select("filter-group", "every group", groups, params.get("group") || "");
      const outcome = select("filter-outcome", "every outcome", overview.outcomes, params.get("outcome") || "");
      const count = el("span", { id: "matrix-count" });
      const pages = el("span", { class: "pages" });
      const body = el("tbody");
      let page = Number(params.get("page") || 0);
      view.appendChild(el("p", { class: "controls" }, [text, " ", group, " ", outcome, " ", count, " tasks ", pages]));
      view.appendChild(legend(overview));
      view.appendChild(el("div", { class: "scroll" }, el("table", { id: "matrix" }, [el("thead", {}, headRow(overview)), body])));

      function query() {
        const out = new URLSearchParams();
        if (text.value) out.set("q", text.value);
        if (group.value) out.set("group", group.value);
        if (outcome.value) out.set("outcome", outcome.value);
        if (page) out.set("page", String(page));
        const tail = out.toString();
        return "#/problems" + (tail ? "?" + tail : "");
      }

      function show(pushed) {
        const code = outcome.value ? overview.codes[overview.outcomes.indexOf(outcome.value)] : "";
        const filter = { q: text.value.toLowerCase(), group: group.value, code: code };
        const shown = rows.filter(function (row) { return matches(filter, row, groups); });
        const last = Math.max(0, Math.ceil(shown.length / PAGE) - 1);
        page = Math.min(Math.max(page, 0), last);
        cb.dom.clear(body);
        shown.slice(page * PAGE, (page + 1) * PAGE).forEach(function (row) { body.appendChild(rowNode(overview, row, groups)); });
        count.textContent = String(shown.length);
        cb.dom.clear(pages);
        cb.dom.add(pages, [
          el("button", { id: "page-prev", type: "button", on: { click: function () { page -= 1; show(true); } } }, "‹"),
          " page " + (page + 1) + " of " + (last + 1) + " ",
          el("button", { id: "page-next", type: "button", on: { click: function () { page += 1; show(true); } } }, "›"),
        ]);
        pages.firstChild.disabled = page === 0;
        pages.lastChild.disabled = page === last;
        if (pushed) {
          // The filter lives in the hash (a link to it reopens it) without a new render.
          history.replaceState(null, "", query());
          cb.ready(query());
        }
      }

      let timer = null;
      text.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { page = 0; show(true); }, 150); });
      text.addEventListener("change", function () { clearTimeout(timer); page = 0; show(true); });
      group.addEventListener("change", function () { page = 0; show(true); });
      outcome.addEventListener("change", function () { page = 0; show(true); });
      show(false);
      return route;
    });
  };
})(window.codebench);
