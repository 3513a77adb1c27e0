"""Screenshots of three diagrams as a reader sees them: in the offline HTML book and in JupyterLab (``make screenshots``).

Usage::

    python tools/diagram_screenshots.py [--html build/html] [--out docs] [--only html|lab]

For each figure in ``SHOTS`` it finds the chapter that displays it (``diagrams.show("name")`` in
``notebooks/NN_name.py``) and writes ``docs/diagram_<name>_html.png`` (the chapter's page of the HTML book built by
``make html``) and ``docs/diagram_<name>_lab.png`` (the chapter's stored notebook opened in JupyterLab, run here on
a copy in a temporary folder, so nothing in the checkout is touched). Each PNG is cropped to the figure.

Headless Chromium (``tools/chromium.py``: offline, every host name unresolvable) is driven over the DevTools protocol
(``websocket-client``, which jupyter_server already needs): it loads the page, finds the figure's ``<img>`` by its
alt text, scrolls it into view and captures just its box. JupyterLab runs with a temporary settings folder that
renders every cell (no windowing) and asks no question about news. Exit status 0 on success, 1 with a message.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT))
import chromium as chromium_tools  # noqa: E402

# The Transformer block (chapter 09), the split into heads (07), the KV cache (10) and the map of the book (00).
SHOTS = ("transformer_block", "multi_head", "kv_cache", "book_map")
WIDTH = 1280  # the browser window, in CSS pixels
MARGIN = 12  # white space kept around the figure, in CSS pixels
FIND_FIGURE = """(() => {
  const img = [...document.querySelectorAll("img")].find((i) => i.alt === %s);
  if (!img || !img.complete || !img.naturalWidth) return null;
  img.scrollIntoView({block: "center"});
  const r = img.getBoundingClientRect();
  return {x: r.left + window.scrollX, y: r.top + window.scrollY, width: r.width, height: r.height};
})()"""
# Every host name stays unresolvable, but the JupyterLab server on 127.0.0.1 must be reachable.
OFFLINE_BUT_LOCAL = (
    *(f for f in chromium_tools.OFFLINE_FLAGS if not f.startswith("--host-resolver-rules=")),
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false",
                                                                         "checkForUpdates": False},
}


class ShotError(Exception):
    """A problem reported without a traceback."""


def chapter_of(name: str) -> str:
    """The stem of the chapter notebook that displays diagram ``name``.

    Raises:
        ShotError: if no chapter does.
    """
    for source in sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.py")):
        if re.search(rf"""diagrams\.show\(["']{re.escape(name)}["']\)""", source.read_text(encoding="utf-8")):
            return source.stem
    raise ShotError(f"no chapter displays diagrams.show({name!r})")


class Browser:
    """Headless Chromium driven over the DevTools protocol: one page, commands sent one at a time."""

    def __init__(self, tmp: Path) -> None:
        import websocket

        binary = chromium_tools.find()
        if binary is None:
            raise ShotError("no Chromium binary found (Debian: apt-get install -y chromium)")
        profile = tmp / "profile"
        self.process = subprocess.Popen(
            [binary, *OFFLINE_BUT_LOCAL, f"--user-data-dir={profile}", "--remote-debugging-port=0",
             "--remote-allow-origins=*", f"--window-size={WIDTH},1000", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=chromium_tools.environment(tmp),
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + 60
        while not (port_file.is_file() and port_file.read_text().strip()):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.close()
                raise ShotError("Chromium did not open its DevTools port")
            time.sleep(0.2)
        port = port_file.read_text().split()[0]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=30) as answer:
            pages = [t for t in json.load(answer) if t.get("type") == "page"]
        self.socket = websocket.create_connection(pages[0]["webSocketDebuggerUrl"], timeout=120)
        self.ids = itertools.count(1)

    def call(self, method: str, **params):
        """Send one command and return its result (events that arrive meanwhile are dropped)."""
        sent = next(self.ids)
        self.socket.send(json.dumps({"id": sent, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("id") == sent:
                if "error" in message:
                    raise ShotError(f"{method}: {message['error']}")
                return message.get("result", {})

    def wait_for(self, expression: str, timeout_s: float, what: str):
        """Evaluate ``expression`` in the page until it returns something truthy; return that."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
            value = result.get("result", {}).get("value")
            if value:
                return value
            time.sleep(0.5)
        raise ShotError(f"timed out after {timeout_s:.0f} s waiting for {what}")

    def figure(self, url: str, alt: str, png: Path, timeout_s: float = 90) -> None:
        """Open ``url``, find the ``<img>`` whose alt text is ``alt`` and save just its box (plus a margin)."""
        self.call("Emulation.setDeviceMetricsOverride", width=WIDTH, height=1000, deviceScaleFactor=1, mobile=False)
        self.call("Page.navigate", url=url)
        find = FIND_FIGURE % json.dumps(alt)
        self.wait_for(find, timeout_s, f"the figure in {url}")
        time.sleep(1.0)  # let the scroll settle and the page finish drawing around it
        box = self.wait_for(find, 10, f"the figure in {url}")
        clip = {"x": max(box["x"] - MARGIN, 0), "y": max(box["y"] - MARGIN, 0),
                "width": box["width"] + 2 * MARGIN, "height": box["height"] + 2 * MARGIN, "scale": 1}
        shot = self.call("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=False)
        import base64

        png.write_bytes(base64.b64decode(shot["data"]))

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.socket.close()
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def jupyterlab(notebooks: list[Path], tmp: Path):
    """A JupyterLab server on copies of ``notebooks`` in ``tmp``; yields its base URL, stops it afterwards."""
    root = tmp / "lab"
    root.mkdir()
    for nb in notebooks:
        shutil.copy2(nb, root / nb.name)
    settings = tmp / "lab-settings"
    for name, values in LAB_SETTINGS.items():
        (settings / name).parent.mkdir(parents=True, exist_ok=True)
        (settings / name).write_text(json.dumps(values), encoding="utf-8")
    port = _free_port()
    env = {**os.environ, "JUPYTERLAB_SETTINGS_DIR": str(settings), "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "ws"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"), "JUPYTER_CONFIG_DIR": str(tmp / "config")}
    command = [sys.executable, "-m", "jupyterlab", "--no-browser", f"--port={port}", "--ServerApp.ip=127.0.0.1",
               "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={root}",
               "--ServerApp.open_browser=False"]
    if os.geteuid() == 0:
        command.append("--allow-root")
    log = (tmp / "lab.log").open("w")
    server = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status", timeout=5):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise ShotError(f"JupyterLab did not start: {(tmp / 'lab.log').read_text()[-1500:]}") from None
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()  # the server also shuts down the kernels it started (see the shared tooling notes on JupyterLab)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def take(html: Path, out: Path, only: str | None) -> list[Path]:
    """Write the screenshots; return their paths.

    Raises:
        ShotError: on a missing book, browser or figure.
    """
    from tformer.book import diagrams

    plan = [(name, chapter_of(name), diagrams.diagram(name).alt) for name in SHOTS]
    if only != "lab" and not (html / "index.html").is_file():
        raise ShotError(f"{html}: no index.html; build the HTML book first (make html)")
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    with tempfile.TemporaryDirectory(prefix="tformer-shots-") as tmp_name:
        tmp = Path(tmp_name)
        browser = Browser(tmp)
        try:
            if only != "lab":
                for name, chapter, alt in plan:
                    png = out / f"diagram_{name}_html.png"
                    browser.figure((html / f"{chapter}.html").as_uri(), alt, png)
                    written.append(png)
            if only != "html":
                notebooks = sorted({ROOT / "notebooks" / f"{chapter}.ipynb" for _, chapter, _ in plan})
                with jupyterlab(notebooks, tmp) as url:
                    for name, chapter, alt in plan:
                        png = out / f"diagram_{name}_lab.png"
                        browser.figure(f"{url}/lab/tree/{chapter}.ipynb", alt, png, timeout_s=180)
                        written.append(png)
        finally:
            browser.close()
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--html", default=str(ROOT / "build" / "html"), help="the built HTML book (make html)")
    parser.add_argument("--out", default=str(ROOT / "docs"), help="where the PNGs go")
    parser.add_argument("--only", choices=("html", "lab"), help="take only one of the two kinds")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    try:
        written = take(Path(args.html), Path(args.out), args.only)
    except ShotError as err:
        print(f"diagram_screenshots: {err}", file=sys.stderr)
        return 1
    for png in written:
        print(f"diagram_screenshots: {png} ({png.stat().st_size // 1024} KB)")
    print(f"diagram_screenshots: {len(written)} screenshots in {time.perf_counter() - start:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
