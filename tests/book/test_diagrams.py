"""The book's diagrams (``tformer.book.diagrams``): each renders, has a title and alt text, no missing glyph, no
label off the canvas, and the same bytes on every call and in every process."""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from functools import cache
from importlib import resources
from pathlib import Path

import pytest
from fontTools.ttLib import TTFont
from matplotlib import font_manager
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

from tformer.book import diagrams

ROOT = Path(__file__).resolve().parents[2]
NS = {"svg": "http://www.w3.org/2000/svg"}
NAMES = diagrams.DIAGRAMS


@cache
def _cmap(path: str) -> frozenset[int]:
    return frozenset(TTFont(path, fontNumber=0).getBestCmap())


def _svg(name: str) -> ET.Element:
    return ET.fromstring(diagrams.diagram(name).svg)


def test_the_issue_list_is_covered() -> None:
    wanted = {"transformer_block", "multi_head", "qkv_dictionary", "masks", "unrolled_rnn", "seq2seq_bottleneck",
              "seq2seq_attention", "kv_cache", "three_families", "gqa", "lstm_cell", "gru_cell", "scan_score_mix",
              "two_storey", "encoder_decoder_base"}
    assert wanted <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_diagram_is_valid_svg_with_title_and_alt_text(name: str) -> None:
    d = diagrams.diagram(name)
    root = ET.fromstring(d.svg)  # raises on malformed XML
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    assert root.get("role") == "img" and root.get("aria-labelledby") == "title desc"
    title, desc = root.find("svg:title", NS), root.find("svg:desc", NS)
    assert title is not None and title.text == d.title and len(d.title) > 10
    assert desc is not None and desc.text == d.alt
    assert len(d.alt.split()) >= 30, f"{name}: alt text too short to describe the figure"
    # The drawn heading is the title, so the picture says what it shows when saved on its own.
    assert d.title in [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert len(root.findall(".//svg:rect", NS)) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_html_output_is_an_img_with_alt_text_and_the_svg_inline(name: str) -> None:
    d = diagrams.diagram(name)
    out = d._repr_html_()
    match = re.fullmatch(r'<figure class="tformer-diagram"[^>]*><img src="data:image/svg\+xml;base64,([A-Za-z0-9+/=]+)" '
                         r'alt="([^"]*)" width="(\d+)"[^>]*/></figure>', out)
    assert match, out[:200]
    assert base64.b64decode(match.group(1)).decode("utf-8") == d.svg
    assert html.unescape(match.group(2)) == d.alt
    assert int(match.group(3)) == int(_svg(name).get("width"))
    assert "src=\"./" not in out and "file:" not in out  # nothing read from a path: works on Colab


@pytest.mark.parametrize("name", NAMES)
def test_every_character_has_a_glyph(name: str) -> None:
    latin = _cmap(font_manager.findfont(FontProperties(family="DejaVu Sans"), fallback_to_default=False))
    cjk = _cmap(str(resources.files("mplfonts") / "fonts" / diagrams.CJK_FONT_FILE))
    root = _svg(name)
    texts = [t.text or "" for t in root.iter("{http://www.w3.org/2000/svg}text")]
    missing = sorted({ch for s in texts for ch in s if ord(ch) not in latin})
    assert not missing, f"{name}: no DejaVu Sans glyph for {missing}"
    outlines = [p.find("svg:title", NS).text for p in root.iter("{http://www.w3.org/2000/svg}path")
                if p.find("svg:title", NS) is not None]
    assert all(diagrams._is_cjk(s) for s in outlines)
    missing = sorted({ch for s in outlines for ch in s if not ch.isspace() and ord(ch) not in cjk})
    assert not missing, f"{name}: no Noto Sans CJK glyph for {missing}"
    assert not any(diagrams._is_cjk(s) for s in texts), f"{name}: CJK left as text (needs a font to show)"


@pytest.mark.parametrize("name", NAMES)
def test_no_label_runs_off_the_canvas(name: str) -> None:
    root = _svg(name)
    width, height = float(root.get("width")), float(root.get("height"))
    measure = TextToPath()
    for t in root.iter("{http://www.w3.org/2000/svg}text"):
        size = float(t.get("font-size"))
        style = "italic" if t.get("font-style") == "italic" else "normal"
        weight = t.get("font-weight", "normal")
        prop = FontProperties(family="DejaVu Sans", size=size, style=style, weight=weight)
        w = measure.get_text_width_height_descent(t.text, prop, ismath=False)[0]
        x, y = float(t.get("x")), float(t.get("y"))
        left = {"start": x, "middle": x - w / 2, "end": x - w}[t.get("text-anchor")]
        assert left >= 0 and left + w <= width, f"{name}: {t.text!r} spans x {left:.0f}–{left + w:.0f} of {width}"
        assert size <= y <= height, f"{name}: {t.text!r} at y {y} outside 0–{height}"


@pytest.mark.parametrize("name", NAMES)
def test_output_is_byte_identical_across_calls(name: str) -> None:
    assert diagrams.diagram(name)._repr_html_() == diagrams.diagram(name)._repr_html_()


def test_output_is_byte_identical_across_processes() -> None:
    code = (
        "import hashlib; from tformer.book import diagrams as d; "
        "print(hashlib.sha256(''.join(d.diagram(n)._repr_html_() for n in d.DIAGRAMS).encode()).hexdigest())"
    )
    here = hashlib.sha256("".join(diagrams.diagram(n)._repr_html_() for n in NAMES).encode()).hexdigest()
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert done.stdout.strip() == here


def test_show_displays_html_and_a_stable_text_fallback() -> None:
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()  # display() publishes to a shell, as in a kernel
    try:
        with capture_output() as captured:
            result = diagrams.show("masks")
    finally:
        InteractiveShell.clear_instance()
    assert result is None
    (output,) = captured.outputs
    assert output.data["text/html"] == diagrams.diagram("masks")._repr_html_()
    assert output.data["text/plain"] == f"<diagram 'masks': {diagrams.diagram('masks').title}>"


def test_unknown_name_is_rejected_with_the_list() -> None:
    with pytest.raises(ValueError, match=r"name: expected one of transformer_block, .*got 'transformers'"):
        diagrams.diagram("transformers")


def test_every_diagram_a_notebook_shows_exists() -> None:
    pattern = re.compile(r"\b(?:show|diagram)\(\s*[\"']([a-z_0-9]+)[\"']")
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        for name in pattern.findall(source.read_text(encoding="utf-8")):
            assert name in NAMES, f"{source.name}: show({name!r}) names no diagram"


def test_chromium_draws_every_diagram(tmp_path: Path) -> None:
    """Each <img> decodes in a real browser (an SVG error leaves naturalWidth at 0) at its declared size."""
    chromium = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)),
                    None)
    if chromium is None:
        pytest.skip("no Chromium binary")
    figures = "".join(diagrams.diagram(n)._repr_html_().replace("<img ", f'<img id="{n}" ') for n in NAMES)
    script = (
        "<script>window.onload = () => { document.getElementById('out').textContent = "
        "[...document.images].map(i => i.id + '=' + i.naturalWidth).join(' '); };</script>"
    )
    page = tmp_path / "diagrams.html"
    page.write_text(f"<html><body><pre id='out'>pending</pre>{figures}{script}</body></html>", encoding="utf-8")
    done = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--host-resolver-rules=MAP * ~NOTFOUND", f"--user-data-dir={tmp_path / 'profile'}",
         "--virtual-time-budget=5000", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr[-1000:]
    found = dict(item.split("=") for item in re.search(r"<pre id=\"out\">([^<]*)</pre>", done.stdout)[1].split())
    assert set(found) == set(NAMES)
    for name, width in found.items():
        assert int(width) == diagrams.diagram(name).width, f"{name}: browser could not draw it ({width=})"
