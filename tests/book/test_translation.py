"""The Chinese edition stays in step with the English one (``tools/catalogue.py``; issue: Chinese on every page).

Each rule is first shown failing on a small catalogue written here, then applied to the real ones:

1. a page listed in ``locale/zh_CN/translated.txt`` has every current English string translated, none fuzzy, and
   no English string the catalogue lacks (an English edit shows up here as work for the Chinese edition);
2. no catalogue string uses a banned rendering (变压器, 代币, ...) or breaks the glossary (a strict term in the
   English without its one rendering in the Chinese);
3. the result markers survive translation: same keys, same numbers, in the same order, and each number equals
   what the chapter's run recorded, as the English prose must;
4. inline code, maths and link targets are carried over unchanged.
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from babel.messages.catalog import Catalog
from babel.messages.pofile import read_po, write_po

from tformer.book.results import parse_markers, prose_tolerance

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import catalogue  # noqa: E402

NOTEBOOKS = ROOT / "notebooks"
PAGES = catalogue.translated_pages()


def _write(path: Path, entries: list[tuple[str, str, bool]]) -> Path:
    """A catalogue of (English, Chinese, fuzzy) entries at ``path``."""
    cat = Catalog(locale="zh_CN")
    for english, chinese, fuzzy in entries:
        cat.add(english, chinese, flags=["fuzzy"] if fuzzy else [])
    with path.open("wb") as handle:
        write_po(handle, cat, width=0)
    return path


GOOD = ("The weights are **0.3029**<!-- result: w_cat --> for 猫; see `attend(q, k)`.",
        "注意力……权重为 **0.3029**<!-- result: w_cat -->，见 `attend(q, k)`。", False)


def test_a_good_translation_passes() -> None:
    glossary = [catalogue.Term("attention", "注意力", True), catalogue.Term("weights?", "权重", True)]
    english, chinese, _ = GOOD
    assert catalogue.string_problems(english, chinese, glossary, {"代币": "词元"}) == []


@pytest.mark.parametrize(
    ("english", "chinese", "fuzzy", "expected"),
    [
        ("One token.", "", False, "not translated"),
        ("One token.", "一个词元。", True, "fuzzy"),
        ("Pay in coins.", "用代币支付。", False, "uses '代币'"),
        ("Self-attention mixes tokens.", "自注意力混合各个符号。", False, "must say '词元'"),
        ("It is **0.30**<!-- result: w_cat -->.", "它是 0.30，约 0.3<!-- result: w_cat -->。", False,
         "result markers"),
        ("It is **0.30**<!-- result: w_cat -->.", "它是 0.30。", False, "result markers"),
        ("It is **0.30**<!-- result: w_cat -->.", "它是0.30<!-- result: w_cat -->。", False, "result markers"),
        ("Call `attend(q, k)`.", "调用 `attend(k, q)`。", False, "inline code differ"),
        ("See [the paper](https://arxiv.org/abs/1706.03762).", "见[论文](https://arxiv.org)。", False,
         "link targets differ"),
        ("Then $x^2$ grows.", "然后 $x^3$ 增大。", False, "maths differ"),
        ("\\frac{a}{b}", "\\frac{b}{a}", False, "display formula"),
        ("The tokens are long here.", "The tokens are long here.", False, "the English copied"),
        ("1,000 hidden units", "10,000 个隐藏单元", False, "numbers of the English missing"),
        ("Self-attention is attention to itself.", "自注意力是对自身的关注。", False, "must say '注意力'"),
        ("Beam search keeps K prefixes.", "光束搜索保留 K 个前缀。", False, "uses '光束搜索'"),
        ("The masked tokens.", "被遮住的词元。", False, "must say '掩码'"),
    ],
)
def test_each_fault_is_reported(tmp_path: Path, english: str, chinese: str, fuzzy: bool, expected: str) -> None:
    po = _write(tmp_path / "page.po", [GOOD, (english, chinese, fuzzy)])
    glossary = [catalogue.Term("token", "词元", True), catalogue.Term("attention", "注意力", True),
                catalogue.Term("self-attention", "自注意力", True), catalogue.Term("mask", "掩码", True),
                catalogue.Term("beam search", "束搜索", True)]
    problems = catalogue.catalogue_problems(po, glossary=glossary, banned={"代币": "词元", "光束搜索": "束搜索"})
    assert len(problems) == 1 and expected in problems[0], problems


def test_an_english_edit_shows_up_as_work(tmp_path: Path) -> None:
    po = _write(tmp_path / "page.po", [GOOD])
    current = [GOOD[0], "A sentence the author just added."]
    problems = catalogue.catalogue_problems(po, current, glossary=[], banned={})
    assert len(problems) == 1 and "new English" in problems[0]


def test_what_a_good_translation_may_do() -> None:
    """Reorder marked numbers, drop an everyday "attention", join terms with a hyphen, keep "seq2seq"'s 2."""
    glossary = catalogue.load_glossary()
    ok = [
        ("**0.30**<!-- result: a --> and **0.15**<!-- result: b -->", "**0.15**<!-- result: b --> 与 **0.30**<!-- result: a -->"),
        ("Pay attention to the shapes.", "留意这些形状。"),
        ("The encoder-decoder reads.", "编码器-解码器读取。"),
        ("A seq2seq model in float64.", "一个序列到序列模型，用 float64 计算。"),
    ]
    for english, chinese in ok:
        assert catalogue.string_problems(english, chinese, glossary, {}) == [], english


def test_the_longest_glossary_term_wins() -> None:
    glossary = catalogue.load_glossary()
    english = "RoPE, rotary position embedding, rotates each query and key."
    assert catalogue.string_problems(english, "旋转位置编码（RoPE）旋转每个查询和键。", glossary, {}) == []
    problems = catalogue.string_problems(english, "RoPE 旋转每个查询和键。", glossary, {})
    assert any("旋转位置编码" in p for p in problems) and not any("嵌入" in p for p in problems)


def test_glossary_and_banned_list_are_well_formed() -> None:
    glossary = catalogue.load_glossary()
    banned = catalogue.load_banned()
    chinese = {term.chinese for term in glossary}
    assert {"注意力", "查询", "键", "值", "多头注意力", "位置编码", "旋转位置编码", "残差连接", "层归一化", "前馈网络",
            "掩码", "因果掩码", "自回归", "教师强制", "束搜索", "词元"} <= chinese
    assert {"变压器", "代币"} <= set(banned)
    assert not any(bad in term.chinese for bad in banned for term in glossary)


# ---------------------------------------------------------------------------------------------------------------
# The real catalogues.


@pytest.fixture(scope="module")
def templates() -> Iterator[Path]:
    """The English strings of every page as extracted now (Sphinx's gettext builder on the staged book)."""
    with tempfile.TemporaryDirectory(prefix="tformer-pot-test-") as tmp:
        yield catalogue.extract(Path(tmp) / "pot")


def test_the_translated_pages_include_the_contents_and_chapters_03_and_05() -> None:
    assert {"index", "00_preface", "03_attention_weighted_average", "05_hand_calculation"} <= set(PAGES)


@pytest.mark.parametrize("page", PAGES)
def test_translated_catalogue_is_complete_and_in_step(page: str, templates: Path) -> None:
    current = catalogue.current_strings(templates / f"{page}.pot")
    assert current, f"{page}: no English strings extracted"
    assert catalogue.catalogue_problems(catalogue.CATALOGUES / f"{page}.po", current) == []


def test_no_catalogue_uses_a_banned_rendering() -> None:
    banned = catalogue.load_banned()
    for po in sorted(catalogue.CATALOGUES.glob("*.po")):
        with po.open("rb") as handle:
            found = [(m.id[:40], bad) for m in read_po(handle) if m.id for bad in banned if bad in m.string]
        assert found == [], f"{po.name}: {found}"


def _manifest(page: str) -> dict:
    path = NOTEBOOKS / "results" / f"{page}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


@pytest.mark.parametrize("page", [p for p in PAGES if p[:2].isdigit()])
def test_numbers_in_the_chinese_prose_are_the_recorded_results(page: str) -> None:
    manifest = _manifest(page)
    with (catalogue.CATALOGUES / f"{page}.po").open("rb") as handle:
        strings = [m.string for m in read_po(handle) if m.id]
    markers = [marker for text in strings for marker in parse_markers(text)]
    wrong = [(m.key, m.number, manifest.get(m.key, {}).get("value")) for m in markers
             if m.problem or m.key not in manifest
             or abs(m.value - manifest[m.key]["value"]) > prose_tolerance(m.number) + 1e-12]
    english = (NOTEBOOKS / f"{page}.py").read_text(encoding="utf-8").count("<!-- result:")
    assert wrong == [] and len(markers) == english


@pytest.mark.parametrize("page", [p for p in PAGES if p[:2].isdigit()])
def test_every_collapsed_block_title_of_a_translated_page_is_translated(page: str) -> None:
    """``<summary>`` titles are raw HTML, which gettext does not extract: ``summaries.tsv`` must cover them."""
    import re

    known = {row[0] for row in catalogue.rows(catalogue.LOCALE / catalogue.LANGUAGE / "summaries.tsv")}
    titles = set(re.findall(r"<summary>([^<]*)</summary>", (NOTEBOOKS / f"{page}.py").read_text(encoding="utf-8")))
    assert titles - known == set(), f"{page}: add these to summaries.tsv: {sorted(titles - known)}"
