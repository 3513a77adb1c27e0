"""Screenshots of the book's controls running in a real JupyterLab: ``docs/controls_poet_lab.png`` (chapter 17)
and ``docs/controls_translator_lab.png`` (chapter 10).

Usage::

    python tools/controls_screenshot.py [--out docs]

ipywidgets need a live kernel, so a stored notebook cannot show them: this writes a two-cell notebook into a
temporary folder (the calls chapters 17 and 10 make: ``poem_controls(load_poet(), "白日")`` and
``translator_controls(load_translator(), "the cat sat on the mat")``), opens it in JupyterLab in headless Chromium
(the helpers of ``tools/diagram_screenshots.py``), runs both cells with Shift+Enter as a reader would, waits until
the poem and the heatmap are drawn, moves the temperature slider to check that the poem follows it, and captures
each cell's output. Exit status 0 on success, 1 with a message.
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
import tempfile
import time
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from diagram_screenshots import Browser, ShotError, jupyterlab  # noqa: E402

CELLS = (
    "from tformer.book.playground import poem_controls\nfrom tformer.book.shipped import load_poet\n\n"
    "poem_controls(load_poet(), \"白日\")",
    "from tformer.book.playground import translator_controls\nfrom tformer.book.shipped import load_translator\n\n"
    "translator_controls(load_translator(), \"the cat sat on the mat\")",
)
OUTPUT_BOX = """(() => {
  const cell = document.querySelectorAll(".jp-Notebook .jp-CodeCell")[%d];
  const out = cell && cell.querySelector(".jp-OutputArea");
  if (!out || out.getBoundingClientRect().height < 40) return null;
  out.scrollIntoView({block: "start"});
  const r = out.getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};
})()"""
POEM = """(() => { const h = [...document.querySelectorAll(".widget-html-content")]
  .map((e) => e.innerText).find((t) => t.includes("couplets in form")); return h || null; })()"""
HEATMAP = """(() => { const cells = document.querySelectorAll(".jp-Notebook .jp-CodeCell");
  return cells.length > 1 && cells[1].querySelector(".jp-OutputArea img") ? true : null; })()"""


def shift_enter(browser: Browser) -> None:
    """Press Shift+Enter in the page: run the selected cell and select the next."""
    key = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13, "modifiers": 8}
    browser.call("Input.dispatchKeyEvent", type="rawKeyDown", **key)
    browser.call("Input.dispatchKeyEvent", type="keyUp", **key)


def click(browser: Browser, expression: str, what: str) -> None:
    """Click the middle of the element whose box ``expression`` returns."""
    box = browser.wait_for(expression, 60, what)
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    for kind in ("mousePressed", "mouseReleased"):
        browser.call("Input.dispatchMouseEvent", type=kind, x=x, y=y, button="left", clickCount=1)


def capture(browser: Browser, index: int, png: Path) -> None:
    box = browser.wait_for(OUTPUT_BOX % index, 30, f"cell {index + 1}'s output")
    time.sleep(1.0)
    box = browser.wait_for(OUTPUT_BOX % index, 10, f"cell {index + 1}'s output")
    clip = {"x": box["x"], "y": box["y"], "width": box["width"], "height": min(box["height"], 1400), "scale": 1}
    shot = browser.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
    png.write_bytes(base64.b64decode(shot["data"]))


def take(out: Path) -> list[Path]:
    """Run the two cells in JupyterLab and write the screenshots; return their paths.

    Raises:
        ShotError: on a missing browser, a server that does not start, or controls that do not appear or react.
    """
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tformer-controls-") as tmp_name:
        tmp = Path(tmp_name)
        notebook = tmp / "controls.ipynb"
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in CELLS])
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
        nbformat.write(nb, notebook)
        browser = Browser(tmp)
        try:
            with jupyterlab([notebook], tmp) as url:
                browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1400, deviceScaleFactor=1,
                             mobile=False)
                browser.call("Page.navigate", url=f"{url}/lab/tree/controls.ipynb")
                idle = """(() => { const s = document.querySelector(".jp-Notebook-ExecutionIndicator");
                  return s && s.getAttribute("data-status") === "idle" ? true : null; })()"""
                browser.wait_for(idle, 180, "the kernel to start")
                time.sleep(10)  # "idle" shows before the kernel's session is wired to the notebook: let it settle
                first_prompt = """(() => { const p = document.querySelector(".jp-Notebook .jp-CodeCell .jp-InputPrompt");
                  if (!p) return null; const r = p.getBoundingClientRect();
                  return {x: r.left, y: r.top, width: r.width, height: r.height}; })()"""
                click(browser, first_prompt, "the first cell")
                shift_enter(browser)
                shift_enter(browser)
                first = browser.wait_for(POEM, 180, "the poem controls")
                browser.wait_for(HEATMAP, 180, "the translator's heatmap")
                written = [out / "controls_poet_lab.png", out / "controls_translator_lab.png"]
                capture(browser, 0, written[0])
                capture(browser, 1, written[1])
                # The poem must follow its controls: type a new temperature into the slider's readout as a reader
                # would (click it, replace its text, press Enter) and wait for another poem.
                readout = """(() => { const r = document.querySelector(".widget-slider .widget-readout");
                  if (!r) return null; r.scrollIntoView({block: "center"}); const b = r.getBoundingClientRect();
                  return {x: b.left, y: b.top, width: b.width, height: b.height}; })()"""
                click(browser, readout, "the temperature readout")
                browser.call("Runtime.evaluate", expression="""(() => { const r = document.activeElement;
                  const range = document.createRange(); range.selectNodeContents(r);
                  const sel = window.getSelection(); sel.removeAllRanges(); sel.addRange(range); })()""")
                browser.call("Input.insertText", text="1.5")
                key = {"key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "nativeVirtualKeyCode": 13}
                browser.call("Input.dispatchKeyEvent", type="keyDown", text="\r", **key)
                browser.call("Input.dispatchKeyEvent", type="keyUp", **key)
                changed = f"""(() => {{ const t = ({POEM}); return t && t !== {json.dumps(first)} ? t : null; }})()"""
                browser.wait_for(changed, 60, "the poem to change with the temperature")
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(ROOT / "docs"), help="where the PNGs go")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        written = take(Path(args.out))
    except ShotError as err:
        print(f"controls_screenshot: {err}", file=sys.stderr)
        return 1
    for png in written:
        print(f"controls_screenshot: {png} ({png.stat().st_size // 1024} KB)")
    print(f"controls_screenshot: done in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
