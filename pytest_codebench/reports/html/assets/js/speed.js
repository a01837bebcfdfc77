/* #/speed : per model, the speedups (suspects marked) and fast_p's curve; for two models, each
   task's best speedup of one against the other's. */
"use strict";
(function (cb) {
  const el = cb.dom.el;

  function pairs(speed, a, b) {
    const points = [];
    const first = speed.models[a].best, second = speed.models[b].best;
    for (let i = 0; i < speed.tasks.length; i++) {
      if (first[i] !== null && second[i] !== null) points.push({ x: first[i], y: second[i], task: speed.tasks[i] });
    }
    return points;
  }

  function modelSelect(id, speed, chosen) {
    return el("select", { id: id }, speed.models.map(function (model, i) {
      const option = el("option", { value: i }, cb.dom.modelLabel(model.model));
      option.selected = i === chosen;
      return option;
    }));
  }

  function versus(view, speed) {
    const chart = cb.charts.figure("speedup-vs", "each task's best speedup, one model against another (log-log; dashed: equal)");
    const a = modelSelect("speed-a", speed, 0), b = modelSelect("speed-b", speed, 1);
    let drawn = null;
    function draw() {
      if (drawn) drawn.destroy();
      const names = [speed.models[a.value].model, speed.models[b.value].model];
      drawn = cb.charts.versus(chart.canvas, pairs(speed, Number(a.value), Number(b.value)), names);
    }
    a.addEventListener("change", draw);
    b.addEventListener("change", draw);
    view.appendChild(el("h2", {}, "Model against model"));
    view.appendChild(el("p", { class: "controls" }, ["x: ", a, " y: ", b]));
    view.appendChild(chart.node);
    draw();
  }

  cb.views.speed = function (view, overview) {
    if (!overview.speed) {
      view.appendChild(el("p", { class: "empty" }, "No item of this run has a speedup (performance was not measured)."));
      return Promise.resolve();
    }
    return cb.need(["speed"]).then(function (results) {
      const speed = results[0];
      speed.models.forEach(function (model) {
        const section = el("section", { class: "model-speed", data: { model: model.model } }, [el("h2", {}, cb.dom.modelLabel(model.model))]);
        const summary = model.speedups.length + " passed items with a speedup over " + model.problems + " problems; " + model.suspect.length + " suspect (red)";
        section.appendChild(el("p", {}, summary));
        const strip = cb.charts.figure("speedup-chart-" + model.model, "speedups of passed items (log scale; suspects marked)");
        const curve = cb.charts.figure("fastp-chart-" + model.model, "fast_p over p, from each problem's best passed sample (the leaderboard's is best@1)");
        section.appendChild(el("div", { class: "pair" }, [strip.node, curve.node]));
        view.appendChild(section);
        cb.charts.strip(strip.canvas, model, function (nodeid) { location.hash = cb.dom.itemHref(nodeid); });
        cb.charts.fastp(curve.canvas, speed.p, model.fast_p);
      });
      if (speed.models.length >= 2) versus(view, speed);
    });
  };
})(window.codebench);
