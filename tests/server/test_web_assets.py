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


# ─── the stylesheet's colours ────────────────────────────────────────────────

STYLESHEET = Path(__file__).parents[2] / "orchestrator/server/web/assets/app.css"
GRAPH_VIEW = STYLESHEET.with_name("graph-view.js")
FAMILIES = ("info", "warn", "ok", "bad", "off")


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    """WCAG 2's contrast ratio of two ``#rrggbb`` colours."""
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def _themes() -> dict[str, dict[str, str]]:
    """The colour variables of each theme: the light one (the first ``:root``) and the dark
    one (``:root`` under ``prefers-color-scheme: dark``), which overrides it."""
    text = STYLESHEET.read_text(encoding="utf-8")
    dark_at = text.index("@media (prefers-color-scheme: dark)")

    def variables(block: str) -> dict[str, str]:
        return dict(re.findall(r"--([a-z-]+):\s*(#[0-9a-f]{6});", block))

    light = variables(text[:dark_at])
    dark = {**light, **variables(text[dark_at : text.index("}\n}", dark_at)])}
    return {"light": light, "dark": dark}


def test_contrast_is_measured_as_wcag_says() -> None:
    assert contrast("#000000", "#ffffff") == pytest.approx(21)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_status_colours_and_text_pass_wcag_aa_in_both_themes(theme: str) -> None:
    """Each status family's text on its background, and the page's text, muted text and
    links on its surfaces, reach 4.5:1 (WCAG AA for normal text)."""
    colours = _themes()[theme]
    pairs = [(f"{family}-fg", f"{family}-bg") for family in FAMILIES] + [
        ("fg", "bg"),
        ("fg", "surface"),
        ("muted", "bg"),
        ("muted", "surface"),
        ("accent", "bg"),
        ("accent", "selected"),
        ("fg", "selected"),
        ("warn-fg", "bg"),
    ]
    low = {
        f"{text} on {back}": round(contrast(colours[text], colours[back]), 2)
        for text, back in pairs
        if contrast(colours[text], colours[back]) < 4.5
    }
    assert low == {}, low


def test_graph_status_fills_keep_their_labels_readable() -> None:
    """The graph's node fills (graph-view.js) under its #111 labels reach 4.5:1."""
    source = GRAPH_VIEW.read_text(encoding="utf-8")
    block = source[
        source.index("const STATUS_COLOURS") : source.index(
            "};", source.index("const STATUS_COLOURS")
        )
    ]
    fills = dict(re.findall(r'(\w+): "(#[0-9a-f]{6})"', block))
    assert len(fills) >= 15, fills
    low = {
        name: round(contrast("#111111", fill), 2)
        for name, fill in fills.items()
        if contrast("#111111", fill) < 4.5
    }
    assert low == {}, low
