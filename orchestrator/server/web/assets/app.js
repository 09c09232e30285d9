/* The page's shell: who is signed in, the header and nav, and routing in the fragment.
 *
 * Start-up: if the document carries a JSON script element with the id orchestrator-data
 * (a standalone export, `orchestrator graph SESSION --format html`) the page draws that
 * session from it and touches no network: no login, no sockets, no action controls.
 * Otherwise `GET /api/me` says who we are; a 401 shows the login form (the token is posted
 * once to `/api/login`, which sets an HttpOnly cookie: the page never keeps the token), an
 * unreachable daemon shows a retry countdown. Then the shell routes on the fragment:
 * `#/` sessions, `#/sessions/ID` one session, `#/sessions/ID/board` its board, `#/teammates`
 * teammates. Each page is a function
 * `(main, context) -> dispose` and the router disposes the last page (its sockets, timers)
 * before drawing the next. A request or socket refused for want of a sign-in later (the
 * cookie expired or was revoked: util.js raises `orchestrator:signed-out`) brings the form
 * back.
 */
(function (root) {
  "use strict";
  const O = root.Orchestrator;
  const h = O.h;

  const app = {
    me: null,
    dispose: null,
  };

  function canOperate() {
    return Boolean(app.me && (app.me.permissions || []).indexOf("operate") >= 0);
  }

  function offlineData() {
    const element = document.getElementById("orchestrator-data");
    if (!element) return null;
    try {
      return JSON.parse(element.textContent || "{}");
    } catch (error) {
      return { error: "the embedded session data is not valid JSON" };
    }
  }

  function mainElement() {
    return document.getElementById("main");
  }

  function showMessage(text, kind) {
    const main = mainElement();
    O.clear(main);
    main.appendChild(h("p", { class: "notice " + (kind || ""), role: "status", text: text }));
  }

  function renderLogin(problem) {
    const header = document.getElementById("header");
    O.clear(header);
    header.appendChild(h("h1", { text: "Orchestrator" }));
    const main = mainElement();
    O.clear(main);
    const input = h("input", { id: "login-token", type: "password", name: "token", autocomplete: "current-password", required: true });
    const error = h("p", { id: "login-error", class: "error", role: "alert", text: problem || "" });
    const form = h(
      "form",
      { id: "login", class: "login", "aria-labelledby": "login-title" },
      h("h2", { id: "login-title", text: "Sign in" }),
      h("label", { for: "login-token", text: "Token" }),
      input,
      h("button", { type: "submit", text: "Sign in" }),
      error
    );
    form.addEventListener("submit", async function (event) {
      event.preventDefault();
      error.textContent = "";
      try {
        app.me = await O.postJson("/api/login", { token: input.value });
        input.value = "";
        startShell();
      } catch (failure) {
        input.value = "";
        error.textContent = failure.status === 401 ? "That token was not accepted." : String(failure.message);
      }
    });
    main.appendChild(form);
    input.focus();
  }

  function renderHeader() {
    const header = document.getElementById("header");
    O.clear(header);
    const nav = h(
      "nav",
      { "aria-label": "Main" },
      h("a", { href: "#/", id: "nav-sessions", text: "Sessions" }),
      h("a", { href: "#/teammates", id: "nav-teammates", text: "Teammates" })
    );
    const who = h(
      "span",
      { class: "principal", id: "principal" },
      app.me.name + (canOperate() ? " (operator)" : " (viewer)")
    );
    const parts = [h("h1", { text: "Orchestrator" }), nav, who];
    if (!app.me.open) {
      parts.push(
        h("button", {
          type: "button",
          class: "link",
          id: "logout",
          text: "Sign out",
          onclick: async function () {
            try {
              await O.postJson("/api/logout", {});
            } catch (error) {
              /* signed out either way */
            }
            app.me = null;
            if (app.dispose) app.dispose();
            app.dispose = null;
            renderLogin();
          },
        })
      );
    }
    parts.forEach(function (p) {
      header.appendChild(p);
    });
  }

  function route() {
    if (!app.me) return;
    if (app.dispose) {
      try {
        app.dispose();
      } catch (error) {
        /* a page that fails to tidy up must not stop the next */
      }
      app.dispose = null;
    }
    const main = mainElement();
    O.clear(main);
    const hash = location.hash || "#/";
    const context = { canOperate: canOperate(), me: app.me };
    let match;
    document.querySelectorAll("nav a").forEach(function (a) {
      a.removeAttribute("aria-current");
    });
    if ((match = /^#\/sessions\/(.+)\/board$/.exec(hash))) {
      app.dispose = O.pages.board(main, Object.assign(context, { id: decodeURIComponent(match[1]) }));
      document.title = "Board · Orchestrator";
    } else if ((match = /^#\/sessions\/(.+)$/.exec(hash))) {
      app.dispose = O.pages.session(main, Object.assign(context, { id: decodeURIComponent(match[1]) }));
      document.title = "Session · Orchestrator";
    } else if ((match = /^#\/diff\/([^/]+)\/([^/]+)$/.exec(hash))) {
      app.dispose = O.pages.diff(main, Object.assign(context, { a: decodeURIComponent(match[1]), b: decodeURIComponent(match[2]) }));
      document.title = "Compare · Orchestrator";
    } else if (hash === "#/teammates") {
      document.getElementById("nav-teammates").setAttribute("aria-current", "page");
      app.dispose = O.pages.teammates(main, context);
      document.title = "Teammates · Orchestrator";
    } else {
      document.getElementById("nav-sessions").setAttribute("aria-current", "page");
      app.dispose = O.pages.sessions(main, context);
      document.title = "Sessions · Orchestrator";
    }
  }

  function startShell() {
    renderHeader();
    route();
  }

  let retryDelay = 1000;

  async function start() {
    const data = offlineData();
    if (data) {
      const header = document.getElementById("header");
      O.clear(header);
      header.appendChild(h("h1", { text: "Orchestrator" }));
      header.appendChild(h("span", { class: "principal", text: "offline copy" }));
      if (data.error) {
        showMessage(data.error, "error");
        return;
      }
      O.pages.session(mainElement(), { offline: data, canOperate: false, id: O.sessionId(data.session && (data.session.id || data.session.uri)) });
      return;
    }
    // A session's page: its envelopes (the big answer) are asked for beside /api/me, not
    // after it; the page takes them (O.takePrefetched) if it is the first one shown.
    const wanted = /^#\/sessions\/(.+)$/.exec(location.hash || "");
    if (wanted) {
      const path = "/api/sessions/" + encodeURIComponent(decodeURIComponent(wanted[1])) + "/envelopes";
      const promise = O.api(path);
      promise.catch(function () {}); // not taken: the page asks again
      app.prefetched = { path: path, promise: promise };
    }
    try {
      app.me = await O.api("/api/me");
    } catch (error) {
      app.prefetched = null; // asked before the sign-in: refused, or stale by the time it is used
      if (error.status === 401) {
        renderLogin();
        return;
      }
      let left = Math.round(retryDelay / 1000);
      showMessage("The daemon is unreachable, retrying in " + left + " s", "error");
      const tick = setInterval(function () {
        left -= 1;
        if (left > 0) showMessage("The daemon is unreachable, retrying in " + left + " s", "error");
      }, 1000);
      setTimeout(function () {
        clearInterval(tick);
        start();
      }, retryDelay);
      retryDelay = Math.min(retryDelay * 2, 10000);
      return;
    }
    retryDelay = 1000;
    startShell();
  }

  root.addEventListener("hashchange", route);
  root.addEventListener("orchestrator:signed-out", function () {
    if (!app.me || app.me.open) return;
    app.me = null;
    if (app.dispose) app.dispose();
    app.dispose = null;
    renderLogin("Your sign-in has expired: sign in again.");
  });
  O.app = app;
  /** The answer for `path` asked for as the page started, once; else null. */
  O.takePrefetched = function (path) {
    const early = app.prefetched;
    app.prefetched = null;
    return early && early.path === path ? early.promise : null;
  };
  O.pages = O.pages || {};
  document.addEventListener("DOMContentLoaded", start);
})(window);
