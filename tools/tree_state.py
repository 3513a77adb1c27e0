"""Print a fingerprint of the working tree's state relative to git, so `make test` can prove it changed nothing.

Usage: python tools/tree_state.py            prints one hex digest

The digest covers `git status --porcelain` (which files are modified or untracked, ignored ones excluded) and
the content of every modified and untracked file. `make test` takes it before and after the suite: running the
tests must never rewrite a tracked file (a results manifest, a stored notebook) or leave a new one behind.
Works on a checkout with uncommitted changes too: only what the tests change makes the digests differ.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path


def tree_state(root: Path) -> str:
    """SHA-256 over the porcelain status and the bytes of every file it lists."""
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout
    digest = hashlib.sha256(status)
    for entry in status.split(b"\0"):
        path = root / entry[3:].decode() if len(entry) > 3 else None
        if path is not None and path.is_file():
            digest.update(path.read_bytes())
    return digest.hexdigest()


if __name__ == "__main__":
    print(tree_state(Path.cwd()))
    sys.exit(0)
