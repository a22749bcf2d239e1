"""Sizes and offsets as functions of a program's dynamic dims (the standard
library only, so the dialect's verifiers, the front ends and the passes
read one grammar).

A ``SizeExpr`` is a non-negative integer function of named dims (the
symbols of ``memory.dim_ranges``), built from integer constants, symbols,
``+``, ``*``, ``max``, division by a positive constant rounded up
(``ceildiv``) or down (``floordiv``), and rounding up to a positive
multiple (``align``). Every one of these is monotone non-decreasing in each
argument over the non-negative integers, so every ``SizeExpr`` is monotone
non-decreasing in each dim: its largest value over a box of dim ranges is
its value at the upper ends, its smallest at the lower ends. That is the
whole proof that a size or offset bounded at the upper ends is bounded
everywhere in the range; nothing is sampled. Subtraction is not in the
language for that reason.

The text form is what the IR's string attributes hold::

    expr   := term ("+" term)*
    term   := factor ("*" factor)*
    factor := INT | SYMBOL | "(" expr ")"
            | "max" "(" expr ("," expr)* ")"
            | ("ceildiv" | "floordiv" | "align") "(" expr "," INT ")"
    SYMBOL := [A-Za-z_][A-Za-z0-9_.]*   (not a function name)

``str(expr)`` prints the canonical text, which parses back to an equal
expression. The constructors fold constants, flatten nested sums, products and
maxima, order the terms of sums and products, and drop a maximum's
arguments that another one dominates (``dominates``), so equal functions
built the same way compare equal.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from math import prod


class SizeExprError(ValueError):
    """A size expression that does not parse, or names a dim with no value."""

    def __init__(self, message: str, column: int | None = None) -> None:
        super().__init__(message)
        self.column = column
        """0-based position in the text the message is about, if any."""


@dataclass(frozen=True)
class SizeExpr:
    """Base of the expression nodes."""

    def evaluate(self, dims: Mapping[str, int]) -> int:
        """The value with each symbol at ``dims[symbol]`` (non-negative)."""
        raise NotImplementedError

    def symbols(self) -> frozenset[str]:
        """The dims the value depends on."""
        raise NotImplementedError

    def __add__(self, other: SizeExpr | int) -> SizeExpr:
        return add(self, other)

    def __radd__(self, other: int) -> SizeExpr:
        return add(other, self)

    def __mul__(self, other: SizeExpr | int) -> SizeExpr:
        return mul(self, other)

    def __rmul__(self, other: int) -> SizeExpr:
        return mul(other, self)


@dataclass(frozen=True)
class Const(SizeExpr):
    value: int

    def evaluate(self, dims: Mapping[str, int]) -> int:
        return self.value

    def symbols(self) -> frozenset[str]:
        return frozenset()

    def __str__(self) -> str:
        return str(self.value)


@dataclass(frozen=True)
class Sym(SizeExpr):
    name: str

    def evaluate(self, dims: Mapping[str, int]) -> int:
        try:
            return dims[self.name]
        except KeyError:
            raise SizeExprError(f"no value for dim '{self.name}'") from None

    def symbols(self) -> frozenset[str]:
        return frozenset({self.name})

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Add(SizeExpr):
    terms: tuple[SizeExpr, ...]

    def evaluate(self, dims: Mapping[str, int]) -> int:
        return sum(term.evaluate(dims) for term in self.terms)

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(term.symbols() for term in self.terms))

    def __str__(self) -> str:
        return " + ".join(map(str, self.terms))


@dataclass(frozen=True)
class Mul(SizeExpr):
    factors: tuple[SizeExpr, ...]

    def evaluate(self, dims: Mapping[str, int]) -> int:
        return prod(factor.evaluate(dims) for factor in self.factors)

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(factor.symbols() for factor in self.factors))

    def __str__(self) -> str:
        return "*".join(f"({f})" if isinstance(f, Add) else str(f) for f in self.factors)


@dataclass(frozen=True)
class Max(SizeExpr):
    args: tuple[SizeExpr, ...]

    def evaluate(self, dims: Mapping[str, int]) -> int:
        return max(arg.evaluate(dims) for arg in self.args)

    def symbols(self) -> frozenset[str]:
        return frozenset().union(*(arg.symbols() for arg in self.args))

    def __str__(self) -> str:
        return f"max({', '.join(map(str, self.args))})"


@dataclass(frozen=True)
class Div(SizeExpr):
    """``arg`` divided by ``divisor``, rounded up (``ceil``) or down."""

    arg: SizeExpr
    divisor: int
    ceil: bool

    def evaluate(self, dims: Mapping[str, int]) -> int:
        value = self.arg.evaluate(dims)
        return -(-value // self.divisor) if self.ceil else value // self.divisor

    def symbols(self) -> frozenset[str]:
        return self.arg.symbols()

    def __str__(self) -> str:
        return f"{'ceildiv' if self.ceil else 'floordiv'}({self.arg}, {self.divisor})"


@dataclass(frozen=True)
class Align(SizeExpr):
    """``arg`` rounded up to a multiple of ``alignment``."""

    arg: SizeExpr
    alignment: int

    def evaluate(self, dims: Mapping[str, int]) -> int:
        return -(-self.arg.evaluate(dims) // self.alignment) * self.alignment

    def symbols(self) -> frozenset[str]:
        return self.arg.symbols()

    def __str__(self) -> str:
        return f"align({self.arg}, {self.alignment})"


def _expr(value: SizeExpr | int) -> SizeExpr:
    if isinstance(value, SizeExpr):
        return value
    if value < 0:
        raise SizeExprError(f"a size expression is never negative (got {value})")
    return Const(value)


def const(value: int) -> SizeExpr:
    return _expr(value)


def sym(name: str) -> SizeExpr:
    return Sym(name)


def add(*terms: SizeExpr | int) -> SizeExpr:
    """The sum, flattened, constants folded into one last term."""
    flat: list[SizeExpr] = []
    total = 0
    for term in map(_expr, terms):
        for part in term.terms if isinstance(term, Add) else (term,):
            if isinstance(part, Const):
                total += part.value
            else:
                flat.append(part)
    flat.sort(key=str)  # one canonical form for equal sums
    if total or not flat:
        flat.append(Const(total))
    return flat[0] if len(flat) == 1 else Add(tuple(flat))


def mul(*factors: SizeExpr | int) -> SizeExpr:
    """The product, flattened, constants folded into one first factor."""
    flat: list[SizeExpr] = []
    coefficient = 1
    for factor in map(_expr, factors):
        for part in factor.factors if isinstance(factor, Mul) else (factor,):
            if isinstance(part, Const):
                coefficient *= part.value
            else:
                flat.append(part)
    if coefficient == 0:
        return Const(0)
    flat.sort(key=str)  # one canonical form for equal products
    if coefficient != 1 or not flat:
        flat.insert(0, Const(coefficient))
    return flat[0] if len(flat) == 1 else Mul(tuple(flat))


def _split_coefficient(expr: SizeExpr) -> tuple[int, SizeExpr | None]:
    """``expr`` as ``k * rest`` (``rest`` None for a constant)."""
    if isinstance(expr, Const):
        return expr.value, None
    if isinstance(expr, Mul) and isinstance(expr.factors[0], Const):
        rest = expr.factors[1:]
        return expr.factors[0].value, rest[0] if len(rest) == 1 else Mul(rest)
    return 1, expr


def dominates(a: SizeExpr, b: SizeExpr) -> bool:
    """Whether ``a >= b`` at every non-negative value of the dims, shown from
    their structure (sound, not complete: False means "not shown")."""
    if a == b:
        return True
    if isinstance(b, Max):
        return all(dominates(a, arg) for arg in b.args)
    if isinstance(b, Const) and a.evaluate(dict.fromkeys(a.symbols(), 0)) >= b.value:
        return True  # monotone: the smallest value is at all dims 0
    if isinstance(a, Max):
        return any(dominates(arg, b) for arg in a.args)
    if isinstance(a, Align):
        return dominates(a.arg, b)
    if isinstance(a, Add):
        if any(dominates(term, b) for term in a.terms):
            return True
        if isinstance(b, Add) and len(b.terms) <= len(a.terms):
            rest = list(a.terms)
            for term in b.terms:
                match = next((t for t in rest if dominates(t, term)), None)
                if match is None:
                    return False
                rest.remove(match)
            return True
        return False
    (ka, ra), (kb, rb) = _split_coefficient(a), _split_coefficient(b)
    return ra is not None and ra == rb and ka >= kb


def maximum(*args: SizeExpr | int) -> SizeExpr:
    """The maximum, flattened, repeats and arguments another one dominates
    dropped, constants folded into one (dropped when 0, as every expression
    is at least 0)."""
    flat: dict[SizeExpr, None] = {}
    largest: int | None = None
    for arg in map(_expr, args):
        for part in arg.args if isinstance(arg, Max) else (arg,):
            if isinstance(part, Const):
                largest = part.value if largest is None else max(largest, part.value)
            else:
                flat[part] = None
    if largest is not None and (largest > 0 or not flat):
        flat[Const(largest)] = None
    items = tuple(flat)
    if not items:
        raise SizeExprError("max() of nothing")
    items = tuple(
        arg
        for i, arg in enumerate(items)
        if not any(
            dominates(other, arg) and (not dominates(arg, other) or j < i)
            for j, other in enumerate(items)
            if j != i
        )
    )
    return items[0] if len(items) == 1 else Max(items)


def _positive(value: int, what: str) -> int:
    if value <= 0:
        raise SizeExprError(f"{what} must be a positive integer (got {value})")
    return value


def ceildiv(arg: SizeExpr | int, divisor: int) -> SizeExpr:
    arg, divisor = _expr(arg), _positive(divisor, "a divisor")
    if divisor == 1:
        return arg
    if isinstance(arg, Const):
        return Const(-(-arg.value // divisor))
    return Div(arg, divisor, ceil=True)


def floordiv(arg: SizeExpr | int, divisor: int) -> SizeExpr:
    arg, divisor = _expr(arg), _positive(divisor, "a divisor")
    if divisor == 1:
        return arg
    if isinstance(arg, Const):
        return Const(arg.value // divisor)
    return Div(arg, divisor, ceil=False)


def align(arg: SizeExpr | int, alignment: int) -> SizeExpr:
    arg, alignment = _expr(arg), _positive(alignment, "an alignment")
    if alignment == 1:
        return arg
    if isinstance(arg, Const):
        return Const(-(-arg.value // alignment) * alignment)
    if isinstance(arg, Align) and arg.alignment % alignment == 0:
        return arg
    return Align(arg, alignment)


_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(.))")
_FUNCTIONS = {"max", "ceildiv", "floordiv", "align"}


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens: list[tuple[str, str, int]] = []
        for match in _TOKEN.finditer(text):
            number, name, other = match.groups()
            if number is not None:
                self.tokens.append(("int", number, match.start(1)))
            elif name is not None:
                self.tokens.append(("name", name, match.start(2)))
            elif other is not None and not other.isspace():
                self.tokens.append(("punct", other, match.start(3)))
        self.tokens.append(("end", "", len(text)))
        self.index = 0

    def peek(self) -> tuple[str, str, int]:
        return self.tokens[self.index]

    def take(self) -> tuple[str, str, int]:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def fail(self, expected: str) -> SizeExprError:
        kind, value, column = self.peek()
        found = "the end" if kind == "end" else f"'{value}'"
        return SizeExprError(
            f"size expression '{self.text}': expected {expected} at column {column + 1}, "
            f"found {found}",
            column,
        )

    def expect(self, punct: str) -> None:
        if self.peek()[:2] != ("punct", punct):
            raise self.fail(f"'{punct}'")
        self.index += 1

    def integer(self) -> int:
        kind, value, _ = self.peek()
        if kind != "int":
            raise self.fail("an integer")
        self.index += 1
        return int(value)

    def expr(self) -> SizeExpr:
        terms = [self.term()]
        while self.peek()[:2] == ("punct", "+"):
            self.index += 1
            terms.append(self.term())
        return add(*terms)

    def term(self) -> SizeExpr:
        factors = [self.factor()]
        while self.peek()[:2] == ("punct", "*"):
            self.index += 1
            factors.append(self.factor())
        return mul(*factors)

    def factor(self) -> SizeExpr:
        kind, value, _ = self.peek()
        if kind == "int":
            self.index += 1
            return Const(int(value))
        if kind == "punct" and value == "(":
            self.index += 1
            inner = self.expr()
            self.expect(")")
            return inner
        if kind == "name" and value in _FUNCTIONS:
            self.index += 1
            self.expect("(")
            first = self.expr()
            if value == "max":
                args = [first]
                while self.peek()[:2] == ("punct", ","):
                    self.index += 1
                    args.append(self.expr())
                self.expect(")")
                return maximum(*args)
            self.expect(",")
            amount_column = self.peek()[2]
            amount = self.integer()
            self.expect(")")
            try:
                if value == "align":
                    return align(first, amount)
                return ceildiv(first, amount) if value == "ceildiv" else floordiv(first, amount)
            except SizeExprError as error:
                raise SizeExprError(
                    f"size expression '{self.text}': {error}", amount_column
                ) from None
        if kind == "name":
            self.index += 1
            return Sym(value)
        raise self.fail("an integer, a dim or '('")


@lru_cache(maxsize=4096)
def parse_size_expr(text: str) -> SizeExpr:
    """The expression ``text`` holds (``SizeExprError`` naming the column).

    Cached (expressions are immutable): the verifier, the analysis, the
    passes and the interpreter each read a storage's ``memory.reserve``,
    and the text is parsed once.
    """
    parser = _Parser(text)
    expr = parser.expr()
    if parser.peek()[0] != "end":
        raise parser.fail("'+', '*' or the end")
    return expr


def bytes_of(dims: Iterable[SizeExpr | int], element_bytes: int) -> SizeExpr:
    """The bytes of a tensor of ``dims`` elements of ``element_bytes`` each."""
    return mul(element_bytes, *dims)
