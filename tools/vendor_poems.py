"""Make the book's poem corpus, ``tformer/data/tang_poems/wuyan.txt``, from the ``chinese-poetry`` collection.

The file ships with the package (nothing is downloaded when a chapter runs); this script records how it was
made, so a maintainer can make it again. Get the collection (MIT licence, Jackey Gao and contributors) with

    npm pack chinese-poetry@2.0.1          # chinese-poetry-2.0.1.tgz, about 85 MB
    tar xzf chinese-poetry-2.0.1.tgz       # package/dist/quantangshi/poet.tang.*.json: the 全唐詩

then run ``python tools/vendor_poems.py package``. What is kept (one poem per line, its lines joined):

- five-character poems of four or eight lines (quatrains, 絕句, and regulated verse, 律詩): every couplet is
  exactly five characters, a full-width comma, five characters, a full-width full stop;
- only poems written entirely in the 3,000 most frequent characters of those poems, so the model's vocabulary
  needs no unknown-character token;
- each text once, in the collection's order (by file number, then position in the file).

The characters stay traditional, as the collection prints them.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

VOCAB = 3000
COUPLET = re.compile(r"[^\W\d_]{5}，[^\W\d_]{5}。")  # five letters, ，, five letters, 。
OUT = Path(__file__).resolve().parent.parent / "tformer" / "data" / "tang_poems" / "wuyan.txt"


def main(package: Path) -> None:
    files = sorted((package / "dist" / "quantangshi").glob("poet.tang.*.json"), key=lambda f: int(f.stem.split(".")[-1]))
    poems: list[str] = []
    for file in files:
        for poem in json.loads(file.read_text(encoding="utf-8")):
            lines = poem["paragraphs"]
            if len(lines) in (2, 4) and all(COUPLET.fullmatch(line) for line in lines):
                poems.append("".join(lines))
    counts = Counter(ch for poem in poems for ch in poem if ch not in "，。")
    common = {ch for ch, _ in counts.most_common(VOCAB)}
    kept = [p for p in dict.fromkeys(poems) if set(p) - {"，", "。"} <= common]
    OUT.write_text("".join(p + "\n" for p in kept), encoding="utf-8")
    print(f"{len(files)} files, {len(poems)} five-character poems, {len(kept)} kept "
          f"({sum(len(p) + 1 for p in kept)} characters) -> {OUT}")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
