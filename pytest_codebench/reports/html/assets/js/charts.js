/* Charts with the vendored Chart.js: stacked bars of outcomes, a strip plot of speedups on a
   log axis, fast_p's curve, and one model's speedups against another's. No animation, so a
   view is drawn when its render returns. */
"use strict";
(function (cb) {
  const el = cb.dom.el;
  // Outcome colours: passing green, the model's failures warm, the machine's doing grey/violet.
  const COLOURS = {
    passed: "#2e7d32", not_faster: "#9ccc65", missing_solution: "#6d4c41", invalid_solution: "#8d6e63",
    empty_patch: "#a1887f", patch_failed: "#ef6c00", setup_failed: "#ff8f00", missing_api: "#f9a825",
    build_error: "#c62828", build_timeout: "#ad1457", test_failed: "#e53935", test_timeout: "#d81b60",
    wrong_output: "#f4511e", runtime_error: "#7b1fa2", vacuous_tests: "#fdd835", sanitizer_failed: "#6a1b9a",
    tampered: "#000000", skipped: "#9e9e9e", error: "#5e35b1",
  };

  function colour(outcome) {
    return COLOURS[outcome] || "#607d8b";
  }

  // A <figure id=...> holding a canvas, its caption below.
  function figure(id, caption) {
    const canvas = el("canvas", { role: "img", "aria-label": caption });
    const node = el("figure", { id: id, class: "chart" }, [el("div", { class: "canvas" }, canvas), el("figcaption", {}, caption)]);
    return { node: node, canvas: canvas };
  }

  function base(extra) {
    return Object.assign({ animation: false, responsive: true, maintainAspectRatio: false }, extra);
  }

  function outcomes(canvas, rows, outcomeNames) {
    const datasets = outcomeNames
      .filter(function (name) { return rows.some(function (row) { return row.counts[name]; }); })
      .map(function (name) {
        return { label: name, backgroundColor: colour(name), data: rows.map(function (row) { return row.counts[name] || 0; }) };
      });
    return new Chart(canvas, {
      type: "bar",
      data: { labels: rows.map(function (row) { return cb.dom.modelLabel(row.model); }), datasets: datasets },
      options: base({ indexAxis: "y", scales: { x: { stacked: true, title: { display: true, text: "items" } }, y: { stacked: true } } }),
    });
  }

  // A log axis's ends: the nearest 1, 2 or 5 times a power of ten beyond the extreme values with a
  // margin, so that no point sits half outside and the ends' labels are round ones like the rest.
  function nice(value, up) {
    const power = Math.pow(10, Math.floor(Math.log10(value)));
    const steps = up ? [1, 2, 5, 10] : [10, 5, 2, 1];
    const found = steps.find(function (step) { return up ? step * power >= value : step * power <= value; });
    return found * power;
  }

  function span(values) {
    return { min: nice(Math.min.apply(null, values) / 1.2, false), max: nice(Math.max.apply(null, values) * 1.2, true) };
  }

  // A log axis labelled only at 1, 2 and 5 times a power of ten: Chart.js labels every minor
  // tick, which crowd each other where the axis spans little.
  function logAxis(title, values) {
    const label = function (value) {
      const mantissa = value / Math.pow(10, Math.floor(Math.log10(value)));
      return [1, 2, 5].some(function (x) { return Math.abs(mantissa - x) < 1e-6; }) ? String(Number(value.toPrecision(3))) : "";
    };
    const axis = { type: "logarithmic", title: { display: true, text: title }, ticks: { callback: label, autoSkip: false } };
    return Object.assign(axis, values && values.length ? span(values) : {});
  }

  // A deterministic jitter, so that the strip plot looks the same on every open.
  function jitter(i) {
    const x = Math.sin(i * 12.9898) * 43758.5453;
    return x - Math.floor(x) - 0.5;
  }

  function strip(canvas, model, onPick) {
    const suspect = new Set(model.suspect);
    const normal = [], marked = [];
    model.speedups.forEach(function (value, i) {
      (suspect.has(i) ? marked : normal).push({ x: value, y: jitter(i), i: i });
    });
    return new Chart(canvas, {
      type: "scatter",
      data: { datasets: [
        { label: "speedup", data: normal, backgroundColor: "rgba(21,101,192,0.5)", pointRadius: 2, borderWidth: 0 },
        { label: "suspect", data: marked, backgroundColor: "#d50000", pointRadius: 4, pointStyle: "triangle" },
      ] },
      options: base({
        parsing: false,
        scales: {
          x: logAxis("speedup (x, log scale)", model.speedups),
          y: { display: false, min: -0.6, max: 0.6 },
        },
        plugins: { tooltip: { callbacks: { label: function (c) { return model.ids[c.raw.i] + ": " + cb.dom.number(c.raw.x) + "x"; } } } },
        onClick: function (event, elements) {
          if (elements.length) onPick(model.ids[elements[0].element.$context.raw.i]);
        },
      }),
    });
  }

  function fastp(canvas, p, values) {
    return new Chart(canvas, {
      type: "line",
      data: { datasets: [{ label: "fast_p", data: p.map(function (x, i) { return { x: x, y: values[i] }; }), borderColor: "#1565c0", pointRadius: 0, stepped: true }] },
      options: base({
        parsing: false,
        scales: {
          x: logAxis("p (speedup bar, log scale)", null),
          y: { min: 0, max: 100, title: { display: true, text: "% of problems faster than p" } },
        },
      }),
    });
  }

  function versus(canvas, points, names) {
    const values = points.map(function (point) { return [point.x, point.y]; }).flat();
    const all = values.concat([1]);
    const axis = span(all);
    const low = axis.min, high = axis.max;
    return new Chart(canvas, {
      type: "scatter",
      data: { datasets: [
        { label: "tasks", data: points, backgroundColor: "rgba(21,101,192,0.6)", pointRadius: 3 },
        { label: "equal", type: "line", data: [{ x: low, y: low }, { x: high, y: high }], borderColor: "#9e9e9e", pointRadius: 0, borderDash: [4, 4] },
      ] },
      options: base({
        parsing: false,
        scales: {
          x: logAxis(cb.dom.modelLabel(names[0]) + " speedup (x)", all),
          y: logAxis(cb.dom.modelLabel(names[1]) + " speedup (x)", all),
        },
        plugins: { tooltip: { callbacks: { label: function (c) { return (c.raw.task || "") + ": " + cb.dom.number(c.raw.x) + "x vs " + cb.dom.number(c.raw.y) + "x"; } } } },
      }),
    });
  }

  cb.charts = { colour: colour, figure: figure, outcomes: outcomes, strip: strip, fastp: fastp, versus: versus };
})(window.codebench);
