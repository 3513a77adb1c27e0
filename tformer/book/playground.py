"""Play with the shipped translator: your own sentence, its translation, and where each written word looked.

Chapter 10, section 13 uses these. :func:`read_sentence` translates a sentence and says which words the model
could not read; :func:`cross_attention_map` gives one decoder layer's cross-attention over that sentence; in
JupyterLab and Colab, :func:`translator_controls` puts both behind a text box and layer/head pickers
(ipywidgets, which need a live kernel: the HTML and PDF book show the stored output of a fixed example instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from tformer._checks import check_int, check_type
from tformer.data.text import BOS_ID
from tformer.training.metrics import translate
from tformer.training.teacher_forcing import shift_right

if TYPE_CHECKING:
    import ipywidgets

    from tformer.book.shipped import ShippedTranslator

__all__ = ["Reading", "cross_attention_map", "read_sentence", "translator_controls"]

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
    """

    words: tuple[str, ...]
    seen: tuple[str, ...]
    unknown: tuple[str, ...]
    written: tuple[str, ...]


def read_sentence(translator: ShippedTranslator, sentence: str) -> Reading:
    """Translate one English sentence with greedy decoding and note the words the model cannot read.

    Unseen words are read as ``<unk>`` and counted, not refused (a reader's sentence is real input).

    Raises:
        TypeError: if ``sentence`` is not a ``str``.
        ValueError: if ``sentence`` has no word (empty or only spaces).
    """
    check_type("sentence", sentence, str)
    words = tuple(sentence.lower().split())
    if not words:
        raise ValueError(f"sentence: expected at least one word, got {sentence!r}")
    vocab = translator.src_vocab
    seen = tuple(w if w in vocab else UNK for w in words)
    written = translate(translator.model, [" ".join(words)], vocab, translator.tgt_vocab)[0].split()
    return Reading(words, seen, tuple(w for w in words if w not in vocab), tuple(written))


def cross_attention_map(
    translator: ShippedTranslator, reading: Reading, *, layer: int = -1, head: int | None = None
) -> torch.Tensor:
    """One decoder layer's cross-attention while the model is fed its own translation (teacher forcing).

    Row i is the decoder position that writes ``reading.written[i]`` (the last row writes end-of-sentence);
    column j is source word j (the last column is the source's end-of-sentence token). Rows sum to 1.

    Shape:
        returns (L + 1, S + 1), float32 on the CPU.

    Args:
        layer: decoder layer, 0-based; negative counts from the last (``-1``: the last layer).
        head: one head, 0-based, or ``None`` for the mean over the H heads.

    Raises:
        TypeError: if ``layer`` or ``head`` is not an int (``head`` may be ``None``).
        ValueError: if ``layer`` or ``head`` is out of range for the model.
    """
    config = translator.model.config
    check_int("layer", layer, -config.num_decoder_layers, config.num_decoder_layers - 1)
    if head is not None:
        check_int("head", head, 0, config.num_heads - 1)
    device = next(translator.model.parameters()).device
    src = torch.tensor([translator.src_vocab.encode(list(reading.words), add_eos=True)], device=device)
    target = torch.tensor([translator.tgt_vocab.encode(list(reading.written), add_eos=True)], device=device)
    with torch.no_grad():
        maps = translator.model(src, shift_right(target, BOS_ID), return_attention=True).cross_attention
    weights = maps[layer][0]  # (H, L + 1, S + 1)
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

    from tformer.book.plot import attention_heatmap

    read_sentence(translator, sentence)  # a bad first sentence fails here, before any widget exists
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
        except ValueError as err:
            report.value = f"<p>{html.escape(str(err))}</p>"
            output.clear_output()
            return
        unknown = ", ".join(reading.unknown) or "none"
        report.value = (f"<p>the model reads: <code>{html.escape(' '.join(reading.seen))}</code> "
                        f"({len(reading.unknown)} unknown: {html.escape(unknown)})<br>"
                        f"it writes: <b>{html.escape(' '.join(reading.written))}</b></p>")
        one_head = None if head.value == MEAN else head.value
        weights = cross_attention_map(translator, reading, layer=layer.value, head=one_head)
        which = "mean of heads" if one_head is None else f"head {one_head + 1}"
        box.drawn = (weights, f"cross-attention, decoder layer {layer.value + 1} ({which})")
        with output:
            output.clear_output(wait=True)
            attention_heatmap(weights, [f"writes {w}" for w in [*reading.written, "<eos>"]],
                              [*reading.seen, "<eos>"], title=box.drawn[1])
            display(plt.gcf())
            plt.close()

    box = widgets.VBox([text, widgets.HBox([layer, head]), report, output])
    box.report, box.output = report, output
    for control in (text, layer, head):
        control.observe(redraw, names="value")
    redraw()
    return box
