/* Small helpers every page uses: building DOM, the JSON API, sockets that come back.
 *
 * DOM is built with `h(tag, attributes, ...children)`: text is always set as text (never
 * innerHTML), so nothing a model or a user wrote can become markup. No inline styles: the
 * Content-Security-Policy forbids them; classes and app.css do the styling.
 *
 * `liveSocket(path, handlers)` is a WebSocket to the same origin that reconnects after it
 * closes (a daemon restart): 1 s, doubling to 10 s, reset once a connection opens. It tells
 * its `onState` "connecting", "open" or "retrying" (with the seconds to wait) so the page can
 * show the connection; `onOpen` runs on every (re)connection so callers resubscribe there
 * from the last sequence they saw. Cookies authenticate it; a token never goes in a URL.
 */
(function (root) {
  "use strict";

  function h(tag, attributes) {
    const element = document.createElement(tag);
    const attrs = attributes || {};
    for (const key of Object.keys(attrs)) {
      const value = attrs[key];
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") element.className = value;
      else if (key === "text") element.textContent = value;
      else if (key.startsWith("on") && typeof value === "function") {
        element.addEventListener(key.slice(2), value);
      } else if (value === true) element.setAttribute(key, "");
      else element.setAttribute(key, String(value));
    }
    for (let i = 2; i < arguments.length; i += 1) append(element, arguments[i]);
    return element;
  }

  function append(element, child) {
    if (child === undefined || child === null || child === false) return;
    if (Array.isArray(child)) {
      for (const c of child) append(element, c);
    } else if (typeof child === "string" || typeof child === "number") {
      element.appendChild(document.createTextNode(String(child)));
    } else {
      element.appendChild(child);
    }
  }

  function clear(element) {
    while (element.firstChild) element.removeChild(element.firstChild);
  }

  class HttpError extends Error {
    constructor(status, message) {
      super(message);
      this.status = status;
    }
  }

  async function api(path, options) {
    let response;
    try {
      response = await fetch(path, Object.assign({ credentials: "same-origin", headers: { accept: "application/json" } }, options || {}));
    } catch (error) {
      throw new HttpError(0, "the daemon is unreachable");
    }
    if (response.status === 204) return null;
    let body = null;
    try {
      body = await response.json();
    } catch (error) {
      body = null;
    }
    if (response.status === 401 && path !== "/api/login" && path !== "/api/me") {
      // The cookie expired or was revoked: the shell asks for a token again.
      root.dispatchEvent(new CustomEvent("orchestrator:signed-out"));
    }
    if (!response.ok) {
      throw new HttpError(response.status, (body && body.error) || response.statusText || "error " + response.status);
    }
    return body;
  }

  function postJson(path, data) {
    return api(path, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json" },
      body: JSON.stringify(data),
    });
  }

  function wsUrl(path) {
    const scheme = location.protocol === "https:" ? "wss://" : "ws://";
    return scheme + location.host + path;
  }

  const FIRST_RETRY_MS = 1000;
  const LAST_RETRY_MS = 10000;

  function liveSocket(path, handlers) {
    let socket = null;
    let closed = false;
    let delay = FIRST_RETRY_MS;
    let timer = null;
    let countdown = null;
    const state = handlers.onState || function () {};

    function connect() {
      if (closed) return;
      state("connecting");
      socket = new WebSocket(wsUrl(path));
      let opened = false;
      socket.addEventListener("open", function () {
        opened = true;
        delay = FIRST_RETRY_MS;
        state("open");
        if (handlers.onOpen) handlers.onOpen(send);
      });
      socket.addEventListener("message", function (event) {
        let message;
        try {
          message = JSON.parse(event.data);
        } catch (error) {
          return;
        }
        handlers.onMessage(message, send);
      });
      socket.addEventListener("close", function (event) {
        socket = null;
        if (closed) return;
        if (!opened) signedIn(); // refused: a daemon down, or a sign-in that expired?
        if (handlers.onClose && handlers.onClose(event) === false) {
          closed = true; // the caller takes it from here
          return;
        }
        retry();
      });
    }

    function retry() {
      const wait = delay;
      delay = Math.min(delay * 2, LAST_RETRY_MS);
      let left = Math.ceil(wait / 1000);
      state("retrying", left);
      countdown = setInterval(function () {
        left -= 1;
        if (left > 0) state("retrying", left);
      }, 1000);
      timer = setTimeout(function () {
        clearInterval(countdown);
        countdown = null;
        timer = null;
        connect();
      }, wait);
    }

    function send(message) {
      if (socket && socket.readyState === WebSocket.OPEN) {
        socket.send(JSON.stringify(message));
        return true;
      }
      return false;
    }

    connect();
    return {
      send: send,
      close: function () {
        closed = true;
        if (timer) clearTimeout(timer);
        if (countdown) clearInterval(countdown);
        if (socket) socket.close(1000);
      },
    };
  }

  /** Whether we are still signed in; if not, the shell is told (and asks for a token). */
  function signedIn() {
    api("/api/me").catch(function (error) {
      if (error.status === 401) root.dispatchEvent(new CustomEvent("orchestrator:signed-out"));
    });
  }

  function connectionText(kind, seconds) {
    if (kind === "open") return "live";
    if (kind === "connecting") return "connecting…";
    if (kind === "retrying") return "the daemon is unreachable, retrying in " + seconds + " s";
    if (kind === "waiting") return "not live on the daemon yet, asking again in " + seconds + " s";
    if (kind === "closed") return "closed";
    if (kind === "resting") return "at rest: a message wakes it";
    return kind;
  }

  function formatTime(iso) {
    if (!iso) return "";
    const date = new Date(iso);
    if (isNaN(date.getTime())) return String(iso);
    return date.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");
  }

  function formatDuration(startIso, endIso) {
    if (!startIso) return "";
    const start = new Date(startIso).getTime();
    const end = endIso ? new Date(endIso).getTime() : Date.now();
    if (isNaN(start) || isNaN(end)) return "";
    let seconds = Math.max(0, Math.round((end - start) / 1000));
    const hours = Math.floor(seconds / 3600);
    seconds -= hours * 3600;
    const minutes = Math.floor(seconds / 60);
    seconds -= minutes * 60;
    if (hours) return hours + " h " + minutes + " min";
    if (minutes) return minutes + " min " + seconds + " s";
    return seconds + " s";
  }

  /** `text` cut to `limit` characters, an ellipsis saying so. */
  function shorten(text, limit) {
    const value = String(text || "");
    return value.length <= limit ? value : value.slice(0, limit - 1) + "…";
  }

  /** The id used in `#/sessions/ID` from a session id or URI. */
  function sessionId(idOrUri) {
    return String(idOrUri || "").replace(/^ahp-session:\//, "");
  }

  function debounce(fn, ms) {
    let timer = null;
    const wrapped = function () {
      const args = arguments;
      if (timer) clearTimeout(timer);
      timer = setTimeout(function () {
        timer = null;
        fn.apply(null, args);
      }, ms);
    };
    wrapped.cancel = function () {
      if (timer) clearTimeout(timer);
      timer = null;
    };
    return wrapped;
  }

  function download(filename, blob) {
    const url = URL.createObjectURL(blob);
    const link = h("a", { href: url, download: filename, class: "hidden" });
    document.body.appendChild(link);
    link.click();
    link.remove();
    setTimeout(function () {
      URL.revokeObjectURL(url);
    }, 1000);
  }

  /** What waits for a person (approvals and questions), said in the page's title and drawn
   * on its favicon (an SVG data URL: the policy allows `img-src data:`), so a tab in the
   * background shows it. `n` 0 puts both back. */
  function showWaiting(n, title) {
    const base = title || document.title.replace(/^\(\d+ waiting\) /, "");
    document.title = n > 0 ? "(" + n + " waiting) " + base : base;
    let icon = document.querySelector("link[rel=icon]");
    if (!icon) {
      icon = h("link", { rel: "icon" });
      document.head.appendChild(icon);
    }
    const label = n > 99 ? "99+" : String(n);
    const svg =
      n > 0
        ? "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><circle cx='16' cy='16' r='15' fill='#b45309'/>" +
          "<text x='16' y='22' font-size='" + (label.length > 2 ? 12 : 17) + "' font-family='sans-serif' font-weight='bold' text-anchor='middle' fill='#fff'>" + label + "</text></svg>"
        : "<svg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'><circle cx='16' cy='16' r='14' fill='none' stroke='#1f6feb' stroke-width='4'/></svg>";
    icon.setAttribute("href", "data:image/svg+xml," + encodeURIComponent(svg));
    icon.setAttribute("data-waiting", String(n));
  }

  /** 12345 -> "12,345" (the page's language decides the separator). */
  function formatCount(n) {
    return Number(n || 0).toLocaleString("en");
  }

  /** Milliseconds as people read them: "850 ms", "12.3 s", "4 min 05 s". */
  function formatMs(ms) {
    const value = Number(ms || 0);
    if (value < 1000) return Math.round(value) + " ms";
    if (value < 60000) return (value / 1000).toFixed(1) + " s";
    const seconds = Math.round(value / 1000);
    return Math.floor(seconds / 60) + " min " + String(seconds % 60).padStart(2, "0") + " s";
  }

  root.Orchestrator = root.Orchestrator || {};
  Object.assign(root.Orchestrator, {
    showWaiting: showWaiting,
    wsUrl: wsUrl,
    formatCount: formatCount,
    formatMs: formatMs,
    h: h,
    clear: clear,
    api: api,
    postJson: postJson,
    HttpError: HttpError,
    liveSocket: liveSocket,
    connectionText: connectionText,
    formatTime: formatTime,
    formatDuration: formatDuration,
    sessionId: sessionId,
    shorten: shorten,
    debounce: debounce,
    download: download,
  });
})(window);
