/* The page's global: data files call codebench.load(NAME, VALUE); views ask for files with
   codebench.need(NAMES), which adds <script> elements (fetch() of file:// URLs is refused). */
"use strict";
window.codebench = (function () {
  const data = {};
  const waiting = {};

  function load(name, value) {
    data[name] = value;
  }

  function needOne(name) {
    if (Object.prototype.hasOwnProperty.call(data, name)) return Promise.resolve(data[name]);
    if (!waiting[name]) {
      waiting[name] = new Promise(function (resolve, reject) {
        const script = document.createElement("script");
        script.src = "data/" + name + ".js";
        script.onload = function () {
          if (Object.prototype.hasOwnProperty.call(data, name)) resolve(data[name]);
          else reject(new Error("data file " + script.src + " gave no data"));
        };
        script.onerror = function () {
          delete waiting[name];
          reject(new Error("cannot load data file " + script.src));
        };
        document.head.appendChild(script);
      });
    }
    return waiting[name];
  }

  function need(names) {
    return Promise.all(names.map(needOne));
  }

  // FNV-1a (32 bits) of the UTF-8 bytes: the item file of a node id (reports/html/items.py).
  function shardOf(nodeid, shards) {
    const bytes = new TextEncoder().encode(nodeid);
    let hash = 0x811c9dc5;
    for (let i = 0; i < bytes.length; i++) {
      hash ^= bytes[i];
      hash = Math.imul(hash, 0x01000193) >>> 0;
    }
    return hash % shards;
  }

  return { data: data, load: load, need: need, shardOf: shardOf, views: {} };
})();
