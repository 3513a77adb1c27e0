"""The public API: every exported name exists and is documented with its source and shapes or errors."""

from __future__ import annotations

import inspect

import pytest

import tformer

DIMENSION_FREE = {  # take no tensors, so no Shape: block is owed
    "get_device", "seed_everything", "ModelConfig", "TransformerConfig", "DecoderOnlyConfig", "EncoderOnlyConfig",
}


@pytest.mark.parametrize("name", tformer.__all__)
def test_exported_name_has_a_docstring(name: str) -> None:
    obj = getattr(tformer, name)
    doc = inspect.getdoc(obj) or ""
    assert len(doc.splitlines()) >= 3, f"{name}: docstring too short"
    if inspect.isclass(obj) and hasattr(obj, "forward"):
        doc += inspect.getdoc(obj.forward) or ""  # a module may give its shapes on forward
    if name not in DIMENSION_FREE:
        assert any(word in doc for word in ("Shape", "(B,", "(L,", "(..., L")), f"{name}: no shapes in docstring"


def test_all_is_sorted_and_unique() -> None:
    assert len(set(tformer.__all__)) == len(tformer.__all__)
