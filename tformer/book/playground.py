"""Play with the shipped models: your own sentence through the translator, your own opening line for the poet.

Chapter 10, section 13 uses the translator's: :func:`read_sentence` translates a sentence and says which words
the model could not read; :func:`cross_attention_map` gives one decoder layer's cross-attention over that
sentence; in JupyterLab and Colab, :func:`translator_controls` puts both behind a text box and layer/head pickers.
Chapter 17 uses the poet's: :func:`continue_poem` writes a poem from your opening characters with a chosen
sampling setting, and :func:`poem_controls` puts it behind a text box and sliders. Controls are ipywidgets, which
need a live kernel: the HTML and PDF book show the stored output of a fixed example instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from tformer._checks import check_int, check_type
from tformer.book.shipped import ShippedPoet, ShippedTranslator
from tformer.data.text import BOS_ID, SPECIAL_TOKENS
from tformer.decoding import generate
from tformer.training.metrics import translate
from tformer.training.teacher_forcing import shift_right

if TYPE_CHECKING:
    import ipywidgets

__all__ = ["Poem", "Reading", "continue_poem", "cross_attention_map", "poem_controls", "read_sentence",
           "translator_controls"]

UNK = "<unk>"
MEAN = -1  # the head picker's value for "mean of heads"


@dataclass(frozen=True)
class Reading:
    """A sentence as the translator reads and writes it.

    Attributes:
        words: the sentence lower-cased and split at white space (S words).
        seen: what the model reads, each word or ``"<unk>"`` where its vocabulary lacks it (S entries).
        unknown: the words read as ``"<unk>"``, in order.
        written: the Chinese tokens of its greedy translation (L tokens, end-of-sentence not included).
        finished: whether the translation ended with end-of-sentence; ``False`` when greedy decoding reached its
            length cap first (``translate``'s: twice the source's ids, end-of-sentence included, plus 10, at most
            the model's ``max_len``).
        dropped: words cut from the end of a sentence longer than the model reads (``max_len`` − 1 words and
            end-of-sentence); ``words`` and ``seen`` hold the words it read.
    """

    words: tuple[str, ...]
    seen: tuple[str, ...]
    unknown: tuple[str, ...]
    written: tuple[str, ...]
    finished: bool = True
    dropped: int = 0

    @property
    def row_labels(self) -> list[str]:
        """The rows of :func:`cross_attention_map`: ``"writes 猫"`` for each written word, and ``"writes <eos>"``
        when the translation ended by itself."""
        return [f"writes {w}" for w in (*self.written, *(("<eos>",) if self.finished else ()))]

    @property
    def column_labels(self) -> list[str]:
        """The columns of :func:`cross_attention_map`: the words as read (``<unk>`` included), then ``<eos>``."""
        return [*self.seen, "<eos>"]


def read_sentence(translator: ShippedTranslator, sentence: str) -> Reading:
    """Translate one English sentence with greedy decoding and note the words the model cannot read.

    Unseen words are read as ``<unk>`` and counted, not refused (a reader's sentence is real input); words past
    what the model reads are cut and counted (``Reading.dropped``), as :func:`translate` cuts them.

    Raises:
        TypeError: if ``sentence`` is not a ``str``.
        ValueError: if ``sentence`` has no word (empty or only spaces).
    """
    check_type("translator", translator, ShippedTranslator, "ShippedTranslator (load_translator())")
    check_type("sentence", sentence, str)
    words = tuple(sentence.lower().split())
    if not words:
        raise ValueError(f"sentence: expected at least one word, got {sentence!r}")
    vocab, model = translator.src_vocab, translator.model
    readable = model.max_len - 1  # the source's end-of-sentence takes the last position
    dropped, words = max(0, len(words) - readable), words[:readable]  # translate would cut them too
    seen = tuple(w if w in vocab else UNK for w in words)
    written = translate(model, [" ".join(words)], vocab, translator.tgt_vocab)[0].split()
    cap = min(2 * (len(words) + 1) + 10, model.max_len)  # translate's cap: twice the source ids (+ its <eos>) + 10
    return Reading(words, seen, tuple(w for w in words if w not in vocab), tuple(written),
                   finished=len(written) < cap, dropped=dropped)


def cross_attention_map(
    translator: ShippedTranslator, reading: Reading, *, layer: int = -1, head: int | None = None
) -> torch.Tensor:
    """One decoder layer's cross-attention while the model is fed its own translation (teacher forcing).

    Row i is the decoder position that writes ``reading.written[i]``, and when the translation ended by itself
    (``reading.finished``) a last row writes end-of-sentence; column j is source word j (the last column is the
    source's end-of-sentence token). Rows sum to 1.

    Shape:
        returns (L + 1, S + 1), or (L, S + 1) when decoding stopped at its length cap; float32 on the CPU.

    Args:
        layer: decoder layer, 0-based; negative counts from the last (``-1``: the last layer).
        head: one head, 0-based, or ``None`` for the mean over the H heads.

    Raises:
        TypeError: if ``translator`` or ``reading`` is not what :func:`~tformer.book.shipped.load_translator` and
            :func:`read_sentence` return, or ``layer`` or ``head`` is not an int (``head`` may be ``None``).
        ValueError: if ``layer`` or ``head`` is out of range for the model.
    """
    check_type("translator", translator, ShippedTranslator, "ShippedTranslator (load_translator())")
    check_type("reading", reading, Reading, "Reading (read_sentence())")
    config = translator.model.config
    layer = check_int("layer", layer, -config.num_decoder_layers, config.num_decoder_layers - 1)
    if head is not None:
        head = check_int("head", head, 0, config.num_heads - 1)
    device = next(translator.model.parameters()).device
    src = torch.tensor([translator.src_vocab.encode(list(reading.words), add_eos=True)], device=device)
    # the rows: one per written word, plus end-of-sentence only if the model wrote it (a capped translation may
    # already fill every position the model has)
    target = torch.tensor([translator.tgt_vocab.encode(list(reading.written), add_eos=reading.finished)],
                          device=device)
    with torch.no_grad():
        maps = translator.model(src, shift_right(target, BOS_ID), return_attention=True).cross_attention
    weights = maps[layer][0]  # (H, L (+ 1), S + 1)
    return (weights.mean(dim=0) if head is None else weights[head]).float().cpu()


def translator_controls(translator: ShippedTranslator, sentence: str) -> ipywidgets.VBox:
    """A text box for the sentence, pickers for the decoder layer and head, the translation and its heatmap.

    Every change re-translates and redraws. The returned box's ``report`` attribute is the HTML widget that
    shows what the model reads and writes, ``output`` the widget that holds the heatmap, and ``drawn`` the
    (weights, title) of the heatmap last drawn (tests read them).

    Raises:
        ImportError: if ipywidgets is not installed (``pip install -r requirements.txt`` pins it).
        TypeError, ValueError: as :func:`read_sentence` for the first ``sentence``.
    """
    import html

    import ipywidgets as widgets
    import matplotlib.pyplot as plt
    from IPython.display import display

    from tformer.book.plot import attention_heatmap, use_book_style

    read_sentence(translator, sentence)  # a bad first sentence fails here, before any widget exists
    use_book_style()  # a font with the Chinese glyphs, in a notebook that has not set the book's style
    config = translator.model.config
    text = widgets.Text(value=sentence, description="sentence", continuous_update=False,
                        layout=widgets.Layout(width="36em"))
    layer = widgets.Dropdown(options=[(str(i + 1), i) for i in range(config.num_decoder_layers)],
                             value=config.num_decoder_layers - 1, description="layer")
    # MEAN, not None: ipywidgets reads a None value as "nothing selected" and would show an empty box.
    head = widgets.Dropdown(options=[("mean of heads", MEAN)] + [(str(h + 1), h) for h in range(config.num_heads)],
                            value=MEAN, description="head")
    report, output = widgets.HTML(), widgets.Output()

    def redraw(_change: object = None) -> None:
        try:
            reading = read_sentence(translator, text.value)
            one_head = None if head.value == MEAN else head.value
            weights = cross_attention_map(translator, reading, layer=layer.value, head=one_head)
        except ValueError as err:
            report.value = f"<p>{html.escape(str(err))}</p>"
            output.clear_output()
            return
        unknown = ", ".join(reading.unknown) or "none"
        cut = f"; the last {reading.dropped} words cut, past what it reads" if reading.dropped else ""
        report.value = (f"<p>the model reads: <code>{html.escape(' '.join(reading.seen))}</code> "
                        f"({len(reading.unknown)} unknown: {html.escape(unknown)}{cut})<br>"
                        f"it writes: <b>{html.escape(' '.join(reading.written))}</b></p>")
        which = "mean of heads" if one_head is None else f"head {one_head + 1}"
        box.drawn = (weights, f"cross-attention, decoder layer {layer.value + 1} ({which})")
        with output:
            output.clear_output(wait=True)
            attention_heatmap(weights, reading.row_labels, reading.column_labels, title=box.drawn[1])
            display(plt.gcf())
            plt.close()

    box = widgets.VBox([text, widgets.HBox([layer, head]), report, output])
    box.report, box.output = report, output
    for control in (text, layer, head):
        control.observe(redraw, names="value")
    redraw()
    return box


# ----------------------------------------------------------------------------------------------- the poet
@dataclass(frozen=True)
class Poem:
    """What :func:`continue_poem` wrote.

    Attributes:
        prompt: the opening characters as given.
        unknown: the prompt's characters the model's vocabulary lacks (read as ``<unk>``), in order.
        text: the prompt and what the model added, up to the end of the poem (its newline not included) or the
            model's 64-character context.
        finished: whether the model ended the poem itself (wrote the newline that ends every training poem).
    """

    prompt: str
    unknown: tuple[str, ...]
    text: str
    finished: bool


def continue_poem(
    poet: ShippedPoet, prompt: str = "", *, temperature: float = 0.0, top_k: int | None = None,
    top_p: float | None = None, seed: int = 0,
) -> Poem:
    """Let the poet continue ``prompt`` (any characters, ``""`` for a poem from nothing) until the poem ends.

    The model reads a newline first (every training poem follows one), then the prompt, one token per
    character; :func:`tformer.decoding.generate` writes one character at a time through its key/value cache, each
    chosen at the given ``temperature``, ``top_k`` and ``top_p`` (``temperature=0``: greedy), its random draws
    seeded by ``seed``, until it writes a newline (``stop_id``) or its context of 64 characters is full. The four
    special tokens (``<pad>`` and the others) are never chosen (``banned_ids``): no training target was one, so
    they are not characters.

    Raises:
        TypeError: if ``poet`` is not what :func:`~tformer.book.shipped.load_poet` returns (a model of your own
            goes in ``ShippedPoet(model, vocab, {})``), ``prompt`` is not a str, ``seed`` not an int, or a
            setting has the wrong type (as :func:`~tformer.decoding.generate`).
        ValueError: if ``prompt`` holds a newline or is 63 characters or longer (no room left to write), ``seed``
            is outside [0, 2⁶³), or a setting is out of range (as :func:`~tformer.decoding.generate`).
    """
    check_type("poet", poet, ShippedPoet, "ShippedPoet (load_poet())")
    check_type("prompt", prompt, str)
    seed = check_int("seed", seed, 0, 2**63 - 1)
    vocab, model = poet.vocab, poet.model
    limit = model.max_len
    if "\n" in prompt or len(prompt) >= limit - 1:
        raise ValueError(f"prompt: expected one line shorter than {limit - 1} characters, got {len(prompt)} "
                         f"characters{' with a newline' if chr(10) in prompt else ''}: {prompt[:20]!r}")
    unknown = tuple(ch for ch in prompt if ch not in vocab)
    device = next(model.parameters()).device
    ids = torch.tensor([vocab.encode(["\n", *prompt])], device=device)  # (1, P + 1)
    newline = vocab.stoi["\n"]
    with torch.no_grad():
        out = generate(model, ids, limit - ids.shape[1], temperature=temperature, top_k=top_k, top_p=top_p,
                       generator=torch.Generator(device=device).manual_seed(seed), stop_id=newline,
                       banned_ids=range(len(SPECIAL_TOKENS)))  # the specials were never targets: not characters
    written = out[0, ids.shape[1] :].tolist()
    finished = newline in written
    added = written[: written.index(newline)] if finished else written
    return Poem(prompt, unknown, prompt + "".join(vocab.itos[i] for i in added), finished)


def poem_controls(poet: ShippedPoet, prompt: str = "") -> ipywidgets.VBox:
    """A text box for the opening characters, sliders for temperature, top-k and top-p, a seed, and the poem.

    Every change writes the poem again. The box's ``report`` attribute is the HTML widget that shows the poem
    (tests read it).

    Raises:
        ImportError: if ipywidgets is not installed.
        TypeError, ValueError: as :func:`continue_poem` for the first ``prompt``.
    """
    import html

    import ipywidgets as widgets

    from tformer.data.poems import couplet_form_share

    continue_poem(poet, prompt)  # a bad poet or first prompt fails here, before any widget exists
    wide = {"style": {"description_width": "8em"}, "layout": widgets.Layout(width="30em")}  # labels not cut
    text = widgets.Text(value=prompt, description="opening", continuous_update=False, **wide)
    temperature = widgets.FloatSlider(value=0.8, min=0.0, max=2.0, step=0.05, description="temperature",
                                      continuous_update=False, **wide)
    top_k = widgets.IntSlider(value=0, min=0, max=200, step=5, description="top-k (0: off)", continuous_update=False,
                              **wide)
    top_p = widgets.FloatSlider(value=0.9, min=0.05, max=1.0, step=0.05, description="top-p", continuous_update=False,
                                **wide)
    seed = widgets.BoundedIntText(value=0, min=0, max=10**6, description="seed", **wide)
    report = widgets.HTML()

    def rewrite(_change: object = None) -> None:
        try:
            poem = continue_poem(poet, text.value, temperature=temperature.value, top_k=top_k.value or None,
                                 top_p=top_p.value, seed=seed.value)
        except ValueError as err:
            report.value = f"<p>{html.escape(str(err))}</p>"
            return
        lines = html.escape(poem.text).replace("。", "。<br>")
        unknown = f" ({len(poem.unknown)} unknown: {html.escape(''.join(poem.unknown))})" if poem.unknown else ""
        report.value = (f"<p style='font-size:1.4em'>{lines}</p><p>couplets in form: "
                        f"{couplet_form_share(poem.text):.0%}{unknown}</p>")

    box = widgets.VBox([text, temperature, top_k, top_p, seed, report])
    box.report = report
    for control in (text, temperature, top_k, top_p, seed):
        control.observe(rewrite, names="value")
    rewrite()
    return box
