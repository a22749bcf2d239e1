"""Size expressions: the text form round-trips, every expression is monotone
in each dim, the simplifications keep the value, and bad text is refused
naming the column."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memplan.dialect.size_expr import (
    SizeExpr,
    SizeExprError,
    add,
    align,
    ceildiv,
    const,
    dominates,
    floordiv,
    maximum,
    mul,
    parse_size_expr,
    sym,
)

DIMS = ("H", "W", "p2o.Dim.1")


def _expressions() -> st.SearchStrategy[SizeExpr]:
    leaves = st.one_of(st.integers(0, 300).map(const), st.sampled_from(DIMS).map(sym))

    def extend(children: st.SearchStrategy[SizeExpr]) -> st.SearchStrategy[SizeExpr]:
        pairs = st.lists(children, min_size=1, max_size=3)
        return st.one_of(
            pairs.map(lambda xs: add(*xs)),
            pairs.map(lambda xs: mul(*xs)),
            pairs.map(lambda xs: maximum(*xs)),
            st.tuples(children, st.integers(1, 9)).map(lambda p: ceildiv(*p)),
            st.tuples(children, st.integers(1, 9)).map(lambda p: floordiv(*p)),
            st.tuples(children, st.sampled_from((1, 4, 16, 64))).map(lambda p: align(*p)),
        )

    return st.recursive(leaves, extend, max_leaves=8)


_values = st.fixed_dictionaries({name: st.integers(0, 50) for name in DIMS})


@given(_expressions())
def test_text_parses_back_to_the_same_expression(expr: SizeExpr) -> None:
    assert parse_size_expr(str(expr)) == expr


@given(_expressions(), _values, st.sampled_from(DIMS), st.integers(1, 20))
def test_every_expression_is_monotone_in_each_dim(
    expr: SizeExpr, values: dict[str, int], dim: str, step: int
) -> None:
    larger = {**values, dim: values[dim] + step}
    assert expr.evaluate(larger) >= expr.evaluate(values) >= 0


@given(st.lists(_expressions(), min_size=1, max_size=4), _values)
def test_maximum_keeps_the_largest_value(args: list[SizeExpr], values: dict[str, int]) -> None:
    assert maximum(*args).evaluate(values) == max(a.evaluate(values) for a in args)


@given(_expressions(), _expressions(), _values)
def test_dominates_is_sound(a: SizeExpr, b: SizeExpr, values: dict[str, int]) -> None:
    if dominates(a, b):
        assert a.evaluate(values) >= b.evaluate(values)


def test_simplified_forms() -> None:
    assert str(parse_size_expr("max(64*N, 16*N, 0)")) == "64*N"
    assert str(parse_size_expr("max(W*H, H*W + 4, 3)")) == "H*W + 4"
    assert str(parse_size_expr("align(align(N, 64), 16) + 0*N")) == "align(N, 64)"
    assert parse_size_expr("ceildiv(7, 2) * floordiv(7, 2)").evaluate({}) == 12


@pytest.mark.parametrize(
    ("text", "message", "column"),
    [
        ("H -", "expected '+', '*' or the end at column 3, found '-'", 2),
        ("3 +", "expected an integer, a dim or '(' at column 4, found the end", 3),
        ("align(H, 0)", "an alignment must be a positive integer (got 0)", 9),
        ("ceildiv(H, W)", "expected an integer at column 12, found 'W'", 11),
        ("max()", "expected an integer, a dim or '(' at column 5, found ')'", 4),
    ],
)
def test_bad_text_is_refused_naming_the_column(text: str, message: str, column: int) -> None:
    with pytest.raises(SizeExprError) as error:
        parse_size_expr(text)
    assert message in str(error.value)
    assert error.value.column == column


def test_a_dim_without_a_value_is_named() -> None:
    with pytest.raises(SizeExprError, match="no value for dim 'W'"):
        parse_size_expr("H*W").evaluate({"H": 2})
