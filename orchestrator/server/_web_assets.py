"""The web view's files: served under content-hashed names, or inlined into one HTML file.

The page lives in ``orchestrator/server/web/`` (package data): ``index.html`` and, under
``assets/``, its scripts, styles and the vendored graph libraries with their licences. At
start every asset gets a name with the first 12 hex digits of its SHA-256
(``app.js`` → ``app.3f2a…e1.js``). ``index.html``'s references ``"/assets/NAME"`` are
rewritten to those names. An asset can then be cached for a year (a new release has new
names), while ``index.html`` itself is revalidated on every load. A reference to an asset
that does not exist is a packaging error, raised at start rather than served as a 404.

:meth:`WebAssets.standalone` makes the one-file export (``orchestrator graph --format
html``): the same page with its scripts and styles inlined and the session's data in a
``<script type="application/json" id="orchestrator-data">`` element, which tells the page to
draw that session offline.

No trio, no network: it reads files once, when built.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import mimetypes
import re
from collections.abc import Mapping
from importlib.resources.abc import Traversable
from typing import Any, Final

import attrs

__all__ = [
    "CONTENT_SECURITY_POLICY",
    "Asset",
    "WebAssets",
    "web_root",
]

#: What the page may load and run: only its own files, from its own origin. No inline script
#: or style, no other origin, no framing (clickjacking), no <base> or form elsewhere.
CONTENT_SECURITY_POLICY: Final = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
    "connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_REFERENCE: Final = re.compile(r"""(["'])/assets/([A-Za-z0-9_./-]+)\1""")
#: The tags the one-file page inlines: a script's, or a stylesheet's.
_INLINED: Final = re.compile(
    r"""<script src="/assets/([^"]+)"[^>]*></script>"""
    r"""|<link rel="stylesheet" href="/assets/([^"]+)"[^>]*>"""
)
_MEDIA_TYPES: Final = {
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".json": "application/json",
    ".svg": "image/svg+xml",
    ".md": "text/plain; charset=utf-8",
    ".txt": "text/plain; charset=utf-8",
}


def web_root() -> Traversable:
    """The page's files, as installed with the package."""
    return importlib.resources.files("orchestrator.server") / "web"


@attrs.frozen
class Asset:
    path: str  # its name under assets/, e.g. "vendor/cytoscape.min.js"
    body: bytes
    media_type: str


def _hashed(path: str, body: bytes) -> str:
    digest = hashlib.sha256(body).hexdigest()[:12]
    directory, _, name = path.rpartition("/")
    stem, dot, extension = name.rpartition(".")
    hashed = f"{stem}.{digest}.{extension}" if dot and stem else f"{name}.{digest}"
    return f"{directory}/{hashed}" if directory else hashed


def _media_type(path: str) -> str:
    extension = "." + path.rpartition(".")[2] if "." in path.rpartition("/")[2] else ""
    return (
        _MEDIA_TYPES.get(extension)
        or mimetypes.guess_type(path)[0]
        or "text/plain; charset=utf-8"  # LICENSE and other plain files
    )


def _walk(directory: Traversable, prefix: str = "") -> dict[str, bytes]:
    found: dict[str, bytes] = {}
    for entry in directory.iterdir():
        path = f"{prefix}{entry.name}"
        if entry.is_dir():
            found.update(_walk(entry, path + "/"))
        elif entry.is_file() and not entry.name.startswith("."):
            found[path] = entry.read_bytes()
    return found


class WebAssets:
    """The page's files, read once: ``index.html`` with hashed references, and each asset
    by its hashed name."""

    def __init__(self, root: Traversable | None = None) -> None:
        root = web_root() if root is None else root
        index = root / "index.html"
        if not index.is_file():
            raise FileNotFoundError(f"the web view's index.html is missing from {root}")
        assets_dir = root / "assets"
        files = _walk(assets_dir) if assets_dir.is_dir() else {}
        self._plain = files
        self._names = {path: _hashed(path, body) for path, body in files.items()}
        self._by_hashed = {
            hashed: Asset(path, files[path], _media_type(path))
            for path, hashed in self._names.items()
        }
        self._template = index.read_text("utf-8")
        self.index_html = _REFERENCE.sub(self._rewrite, self._template).encode("utf-8")

    def _rewrite(self, match: re.Match[str]) -> str:
        quote, path = match.group(1), match.group(2)
        hashed = self._names.get(path)
        if hashed is None:
            raise FileNotFoundError(f"index.html refers to /assets/{path}, which is missing")
        return f"{quote}/assets/{hashed}{quote}"

    def asset(self, hashed_path: str) -> Asset | None:
        """The asset served at ``/assets/<hashed_path>``; None for any other name."""
        return self._by_hashed.get(hashed_path)

    def url(self, path: str) -> str:
        """The URL an asset is served at (``/assets/<hashed name>``)."""
        return f"/assets/{self._names[path]}"

    def standalone(self, data: Mapping[str, Any], *, title: str) -> str:
        """One self-contained HTML document: the page with its scripts and styles inlined
        and ``data`` (``{"session": ..., "envelopes": [...]}``) for it to draw offline."""

        def inline(match: re.Match[str]) -> str:
            script, style = match.group(1), match.group(2)
            kind, path = ("script", script) if script is not None else ("style", style)
            text = self._plain[path].decode("utf-8")
            # Only "</script" ("</style") can end the element early; in JavaScript "<\/" is
            # "</", and CSS has no reason to hold it.
            text = re.sub(f"</({kind})", r"<\\/\1", text, flags=re.I)
            return f"<{kind}>{text}</{kind}>"

        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        # JSON in HTML: no "<" (no "</script>" or "<!--"), and the two line separators
        # that old parsers take for line ends, escaped as JSON allows.
        for raw, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
            payload = payload.replace(raw, escaped)
        payload = payload.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
        data_element = f'<script type="application/json" id="orchestrator-data">{payload}</script>'
        escaped_title = title.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        # One pass over the template each: what is put in is never scanned again.
        html = re.sub(
            r"<title>.*?</title>", lambda _: f"<title>{escaped_title}</title>", self._template
        )
        html = html.replace("</head>", data_element + "\n</head>", 1)
        return _INLINED.sub(inline, html)
