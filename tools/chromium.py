"""Headless Chromium, offline, as the HTML-book test and ``make pdf`` run it (as the shared tooling notes on headless Chromium describe).

One place for the binary's names, the flags that keep it off the network (every host name unresolvable) and the
fontconfig that lets it see the Noto Sans CJK font shipped by the ``mplfonts`` dependency (so 猫 renders).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
OFFLINE_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


def find() -> str | None:
    """The path of the first Chromium binary on PATH, or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def environment(tmp: Path) -> dict[str, str]:
    """Environment for Chromium whose fontconfig also sees the fonts of ``mplfonts``; ``tmp`` holds its files."""
    import mplfonts

    conf = tmp / "fonts.conf"
    conf.write_text(
        '<?xml version="1.0"?>\n<!DOCTYPE fontconfig SYSTEM "fonts.dtd">\n<fontconfig>\n'
        '  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>\n'
        f"  <dir>{Path(mplfonts.__file__).parent / 'fonts'}</dir>\n"
        f"  <cachedir>{tmp / 'fc-cache'}</cachedir>\n</fontconfig>\n",
        encoding="utf-8",
    )
    return {**os.environ, "FONTCONFIG_FILE": str(conf), "HOME": str(tmp)}
