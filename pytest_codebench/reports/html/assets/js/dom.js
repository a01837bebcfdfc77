/* Building the page from data: elements and text nodes only, never HTML parsed from data. */
"use strict";
(function (cb) {
  // el("td", {class: "x", data: {metric: "pass@1"}}, ["text", child]); attributes set one by one.
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    const given = attrs || {};
    Object.keys(given).forEach(function (key) {
      const value = given[key];
      if (value === null || value === undefined) return;
      if (key === "data") {
        Object.keys(value).forEach(function (name) {
          if (value[name] !== null && value[name] !== undefined) node.dataset[name] = String(value[name]);
        });
      } else if (key === "on") {
        Object.keys(value).forEach(function (name) { node.addEventListener(name, value[name]); });
      } else {
        node.setAttribute(key, String(value));
      }
    });
    add(node, children);
    return node;
  }

  function add(node, children) {
    (children === undefined ? [] : [].concat(children)).forEach(function (child) {
      if (child === null || child === undefined) return;
      node.appendChild(typeof child === "object" ? child : document.createTextNode(String(child)));
    });
    return node;
  }

  function number(value, digits) {
    if (value === null || value === undefined) return "–";
    return Number(value).toFixed(digits === undefined ? 2 : digits);
  }

  // "41.67% [25.00, 58.33]" or "1.52x [1.10, 2.01]".
  function figure(metric) {
    if (metric.value === null || metric.value === undefined) return "–";
    const unit = metric.unit || "";
    const bounds = metric.low === null || metric.low === undefined ? "" :
      " [" + number(metric.low) + ", " + number(metric.high) + "]";
    return number(metric.value) + unit + bounds;
  }

  function modelLabel(name) {
    // A run of one set: its model's name as its file gives it, where it gives one.
    return name === "" ? (cb.data.overview.run.model || "(this run)") : name;
  }

  function itemHref(nodeid) {
    return "#/item/" + encodeURIComponent(nodeid);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  cb.dom = { el: el, add: add, number: number, figure: figure, modelLabel: modelLabel, itemHref: itemHref, clear: clear };
})(window.codebench);
