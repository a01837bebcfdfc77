/* Routing by the hash: #/, #/speed, #/problems?..., #/item/<node id>. When a view is drawn,
   body[data-ready] names the route; a failure goes to console.error and the page says so. */
"use strict";
(function (cb) {
  let current = 0;

  cb.ready = function (route) {
    document.body.dataset.ready = route;
  };

  function parse(hash) {
    const route = hash || "#/";
    const [path, query] = route.slice(1).split(/\?(.*)/s);
    return { route: route, path: path || "/", params: new URLSearchParams(query || "") };
  }

  function navigate() {
    const overview = cb.data.overview;
    const target = parse(location.hash);
    const view = cb.dom.clear(document.getElementById("view"));
    const mine = ++current;
    delete document.body.dataset.ready;
    document.querySelectorAll("#views a").forEach(function (link) {
      link.classList.toggle("here", link.getAttribute("href") === "#" + target.path.split("/").slice(0, 2).join("/"));
    });
    let done;
    try {
      if (target.path === "/" ) done = cb.views.overview(view, overview);
      else if (target.path === "/speed") done = cb.views.speed(view, overview);
      else if (target.path === "/problems") done = cb.views.problems(view, overview, target.params, target.route);
      else if (target.path.indexOf("/item/") === 0) done = cb.views.item(view, overview, decodeURIComponent(target.path.slice(6)));
      else done = Promise.reject(new Error("no view at " + target.route));
    } catch (error) {
      done = Promise.reject(error);
    }
    done.then(function () {
      if (mine === current) cb.ready(target.route);
    }, function (error) {
      console.error(error);
      if (mine === current) view.appendChild(cb.dom.el("p", { class: "failure" }, "This view could not be drawn: " + error.message));
    });
  }

  window.addEventListener("hashchange", navigate);
  if (!cb.data.overview) {
    console.error(new Error("data/overview.js did not load"));
    return;
  }
  cb.renderHeader(document.getElementById("run"), cb.data.overview);
  navigate();
})(window.codebench);
