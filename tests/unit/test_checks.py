"""The shared argument check: one message format for every size and id the package takes."""

import pytest

from tformer._checks import check_int
from tformer.attention import MultiHeadAttention
from tformer.baselines.rnn import RNN


def test_check_int_returns_the_value_and_enforces_the_minimum() -> None:
    assert check_int("n", 3) == 3
    assert check_int("n", -5) == -5  # no minimum: any int
    assert check_int("n", 0, 0) == 0
    with pytest.raises(ValueError, match=r"^n: expected a positive int, got 0$"):
        check_int("n", 0, 1)
    with pytest.raises(ValueError, match=r"^n: expected a non-negative int, got -1$"):
        check_int("n", -1, 0)
    with pytest.raises(ValueError, match=r"^k: expected an int >= 2, got 1$"):
        check_int("k", 1, 2)


@pytest.mark.parametrize(("value", "got"), [(True, "bool"), (2.0, "float"), ("3", "str"), (None, "NoneType")])
def test_check_int_rejects_non_ints_with_a_type_error(value: object, got: str) -> None:
    with pytest.raises(TypeError, match=rf"^size: expected an int, got {got}$"):
        check_int("size", value, 1)


@pytest.mark.parametrize(("kind", "wanted"), [(bool, "a bool"), (int, "an int"), (float, "a float"), (str, "a str"),
                                              ((str, int), "a str or an int")])  # fmt: skip
def test_check_type_words_builtin_types_as_check_bool_and_check_int_do(kind: object, wanted: str) -> None:
    from tformer._checks import check_type

    assert check_type("flag", b"x", bytes) == b"x"
    with pytest.raises(TypeError, match=rf"^flag: expected {wanted}, got NoneType$"):  # was "expected bool"
        check_type("flag", None, kind)  # type: ignore[arg-type]


def test_modules_use_it_for_their_sizes() -> None:
    with pytest.raises(ValueError, match=r"num_heads: expected a positive int, got 0"):
        MultiHeadAttention(8, 0)
    with pytest.raises(TypeError, match=r"hidden_size: expected an int, got float"):
        RNN(4, 8.0)


def test_check_strs_refuses_a_bare_str_and_non_str_items() -> None:
    from tformer._checks import check_strs

    assert check_strs("tokens", iter(["a", "b"]), "token", "tokenise") == ["a", "b"]
    with pytest.raises(TypeError, match=r"^tokens: expected a list of tokens, got a str \(tokenise\)$"):
        check_strs("tokens", "ab", "token", "tokenise")
    with pytest.raises(TypeError, match=r"^tokens: expected tokens that are str, got int 1$"):
        check_strs("tokens", ["a", 1], "token", "tokenise")


def test_check_number_can_require_a_finite_value() -> None:
    from tformer._checks import check_number

    assert check_number("base", 1e4, 0.0, open_min=True, finite=True) == 1e4
    assert check_number("base", float("inf"), 0.0, open_min=True) == float("inf")  # a bound alone lets ∞ through
    with pytest.raises(ValueError, match=r"^base: expected a finite number > 0, got inf$"):
        check_number("base", float("inf"), 0.0, open_min=True, finite=True)
    with pytest.raises(ValueError, match=r"^x: expected a finite number, got -inf$"):
        check_number("x", float("-inf"), finite=True)


def test_rope_refuses_an_infinite_base() -> None:  # breaker: rope_base=inf rotated only the first pair
    from tformer.positional import RotaryEmbedding
    from tformer.variants.modern_block import ModernDecoderConfig

    with pytest.raises(ValueError, match=r"^base: expected a finite number > 0, got inf$"):
        RotaryEmbedding(8, base=float("inf"))
    with pytest.raises(ValueError, match=r"^rope_base: expected a finite number > 0, got inf$"):
        ModernDecoderConfig(50, d_model=16, num_heads=4, d_ff=32, num_layers=1, num_kv_heads=2, rope_base=float("inf"))
