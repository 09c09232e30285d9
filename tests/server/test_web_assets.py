"""The web view's page and assets (``server/_web_assets``): named by their content, and the
one-file page that carries any text intact and inert."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orchestrator.server import (
    WebAssets,
)
from tests.support.examples import examples


def test_an_asset_is_named_by_its_content_and_a_missing_one_is_a_packaging_error(
    tmp_path: Path,
) -> None:
    root = tmp_path / "web"
    (root / "assets" / "vendor").mkdir(parents=True)
    (root / "index.html").write_text(
        '<html><head><title>x</title><script src="/assets/app.js" defer></script>'
        '<link rel="stylesheet" href="/assets/vendor/lib.min.css"></head></html>'
    )
    (root / "assets" / "app.js").write_text("one();")
    (root / "assets" / "vendor" / "lib.min.css").write_text("a{}")
    (root / "assets" / "vendor" / "LICENSE").write_text("MIT")
    first = WebAssets(root)
    app_url = first.url("app.js")
    assert re.fullmatch(r"/assets/app\.[0-9a-f]{12}\.js", app_url)
    assert re.fullmatch(
        r"/assets/vendor/lib\.min\.[0-9a-f]{12}\.css", first.url("vendor/lib.min.css")
    )
    assert re.fullmatch(r"/assets/vendor/LICENSE\.[0-9a-f]{12}", first.url("vendor/LICENSE"))
    assert app_url.encode() in first.index_html
    served = first.asset(app_url.removeprefix("/assets/"))
    assert served is not None
    assert served.body == b"one();"
    (root / "assets" / "app.js").write_text("two();")
    assert WebAssets(root).url("app.js") != app_url  # new content, new name
    (root / "assets" / "app.js").unlink()
    with pytest.raises(FileNotFoundError, match=r"/assets/app\.js"):
        WebAssets(root)


@settings(max_examples=examples(50))
@given(st.text(max_size=200))
def test_the_offline_page_carries_any_text_intact_and_inert(text: str) -> None:
    """Whatever a session's titles and texts hold, the one-file page's data element holds
    the same JSON, and no text can end the element or open markup."""
    assets = _ASSETS
    data = {"session": {"title": text}, "envelopes": [{"payload": {"text": text}}]}
    html = assets.standalone(data, title=text)
    match = re.search(
        r'<script type="application/json" id="orchestrator-data">(.*?)</script>', html, re.S
    )
    assert match is not None
    assert "<" not in match.group(1)
    assert json.loads(match.group(1)) == data
    title = re.search(r"<title>(.*?)</title>", html, re.S)
    assert title is not None
    assert "<" not in title.group(1)


_ASSETS = WebAssets()
