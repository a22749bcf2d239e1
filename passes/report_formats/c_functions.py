"""The C header's functions of the dynamic dims: a parametric plan in C99.

For a function with dynamic dims (``memory.dim_ranges``) the header
(``c_header``) gets, with ``p`` the prefix in lower case and ``P`` in upper
case:

- ``static inline int p_<func>_dims_ok(size_t D, ...)``: 1 when every dim
  is inside its range, else 0 (the header's check function);

and for each of its pools with an offset program (``usmp{parametric=true}``):

- ``P_<FUNC>_<POOL>_SLOTS``, the number of storages in the program, and per
  storage ``P_<FUNC>_<NAME>_SLOT``, its index (``<NAME>`` as in the
  storage's ``_OFFSET`` macro);
- ``static inline void p_<func>_<pool>_offsets(size_t D, ..., size_t
  offsets[P_<FUNC>_<POOL>_SLOTS])``: each storage's byte offset from the
  pool's base at the dims, by slot; one statement per storage, as the
  program says (``align(max(offsets[J] + size(J) for J in above),
  alignment)``): earlier offsets are read back from the array and each size
  an ``above`` names is computed once, so nothing is expanded;
- ``static inline size_t p_<func>_<pool>_size(size_t D, ...)``: the pool's
  bytes at the dims, ``max(offsets[K] + size(K))``.

Every function takes all the function's dims, in the order of
``memory.dim_ranges``, as ``size_t`` parameters named after the dims
(sanitised; a name C or the standard headers reserve, or one the header
uses, gets ``dim_`` in front).

Arithmetic is on ``size_t`` only: ``+``, ``*``, division by positive
constants, ``p_max``, ``p_ceildiv`` (``a / d + (a % d != 0)``, which cannot
overflow) and ``p_align`` (``p_ceildiv(a, m) * m``). Nothing is undefined
behaviour for any argument: unsigned arithmetic wraps instead of
overflowing and every divisor is a positive constant. For dims inside
their ranges nothing wraps either: every value computed (each constant,
partial sum and partial product, size, offset, end and the pool's bytes) is
a monotone non-decreasing function of the dims (``size_expr``), so its
largest value over the ranges is its value at the upper ends; the
generator evaluates each there and, per pool, an ``#if SIZE_MAX < L`` /
``#error`` refuses to compile the header where ``size_t`` cannot hold the
largest, ``L``. Outside the ranges the values are not the plan's: check
``dims_ok`` first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from xdsl.utils.exceptions import PassFailedException

from memplan.dialect.size_expr import Add, Align, Const, Div, Max, Mul, SizeExpr, Sym
from memplan.passes.planning.parametric import stack_offsets
from memplan.passes.report_formats.c_names import (
    C_KEYWORDS,
    UniqueNames,
    comment,
    sanitise,
)
from memplan.passes.report_formats.common import EXPRESSION_LIMIT
from memplan.passes.report_formats.records import (
    DimRecord,
    FunctionReport,
    ParametricPoolRecord,
)

LINE_WIDTH = 96
"""Statements longer than this are written over several lines."""

_RESERVED = re.compile(
    r"NULL|offsetof|\w*_t|U?INT\w*_(MAX|MIN|C)|(SIZE|PTRDIFF|WCHAR|WINT|SIG_ATOMIC)_(MAX|MIN)"
    r"|_[A-Z_]\w*"
)
"""Names ``<stddef.h>``, ``<stdint.h>`` or C itself reserve (macros, typedefs,
``_X`` and ``__x``): a dim so named is renamed."""

SIZE_T_LIMIT = 2**64
"""Values this large cannot be a ``size_t`` on any platform memplan targets."""


@dataclass(frozen=True)
class Helpers:
    """Names of the header's arithmetic helpers."""

    max: str
    ceildiv: str
    align: str

    def definitions(self) -> list[str]:
        return [
            "/* Arithmetic on size_t for the functions below: no overflow, no division by 0. */",
            f"static inline size_t {self.max}(size_t a, size_t b) {{ return a > b ? a : b; }}",
            f"static inline size_t {self.ceildiv}(size_t a, size_t d) "
            "{ return a / d + (a % d != 0); }",
            f"static inline size_t {self.align}(size_t a, size_t m) "
            f"{{ return {self.ceildiv}(a, m) * m; }}",
        ]


def _literal(value: int) -> str:
    """``value`` as a C constant: ``u`` past what every ``int`` holds."""
    return str(value) if value <= 32767 else f"{value}u"


Node = str | tuple[str, list["Node"]]
"""A C expression: text, or a call (function name, arguments)."""


def _flat(node: Node) -> str:
    if isinstance(node, str):
        return node
    name, args = node
    return f"{name}({', '.join(_flat(arg) for arg in args)})"


def _render(node: Node, indent: int, head: str = "", tail: str = "", note: str = "") -> list[str]:
    """``head + node + tail`` as lines at ``indent``, calls broken one
    argument a line where the statement would pass ``LINE_WIDTH``; ``note``
    (a comment) ends the last line."""
    pad = " " * indent
    text = _flat(node)
    if isinstance(node, str) or indent + len(head) + len(text) + len(tail) <= LINE_WIDTH:
        return [f"{pad}{head}{text}{tail}{note}"]
    name, args = node
    lines = [f"{pad}{head}{name}("]
    for i, arg in enumerate(args):
        lines += _render(arg, indent + 4, tail="," if i < len(args) - 1 else "")
    lines.append(f"{pad}){tail}{note}")
    return lines


def _balanced(name: str, args: Sequence[Node]) -> Node:
    """The maximum of ``args`` as nested two-argument calls, a balanced tree
    (nesting grows with the log of the count)."""
    if len(args) == 1:
        return args[0]
    middle = len(args) // 2
    return (name, [_balanced(name, args[:middle]), _balanced(name, args[middle:])])


class _Translator:
    """Size expressions as C, noting the largest value computed at the upper ends."""

    def __init__(self, params: Mapping[str, str], helpers: Helpers, upper: Mapping[str, int]):
        self.params = params
        self.helpers = helpers
        self.upper = upper
        self.largest = 0
        self.where = ""
        """What is being computed (for a diagnostic)."""
        self.largest_where = ""

    def note(self, value: int) -> int:
        if value > self.largest:
            self.largest, self.largest_where = value, self.where
        return value

    def expr(self, expr: SizeExpr) -> Node:
        self.note(expr.evaluate(self.upper))
        if isinstance(expr, Const):
            return _literal(expr.value)
        if isinstance(expr, Sym):
            return self.params[expr.name]
        if isinstance(expr, Add):  # partial sums are at most the sum
            return " + ".join(_flat(self.expr(term)) for term in expr.terms)
        if isinstance(expr, Mul):
            parts: list[str] = []
            partial = 1
            for factor in expr.factors:
                text = _flat(self.expr(factor))
                parts.append(f"({text})" if isinstance(factor, Add) else text)
                partial = self.note(partial * factor.evaluate(self.upper))
            return " * ".join(parts)
        if isinstance(expr, Max):
            return _balanced(self.helpers.max, [self.expr(arg) for arg in expr.args])
        if isinstance(expr, Div):
            arg = _flat(self.expr(expr.arg))
            if expr.ceil:
                return (self.helpers.ceildiv, [arg, _literal(expr.divisor)])
            return f"({f'({arg})' if isinstance(expr.arg, Add) else arg} / {expr.divisor})"
        if isinstance(expr, Align):
            return (self.helpers.align, [self.expr(expr.arg), _literal(expr.alignment)])
        raise TypeError(f"not a size expression node: {expr!r}")


def helper_names(prefix: str, names: UniqueNames) -> Helpers:
    """The helpers' names for a header whose prefix (lower case) is ``prefix``."""
    return Helpers(
        names.unique(f"{prefix}_max"),
        names.unique(f"{prefix}_ceildiv"),
        names.unique(f"{prefix}_align"),
    )


def _param_names(dims: Sequence[DimRecord], taken: set[str]) -> dict[str, str]:
    local = UniqueNames(taken)
    found: dict[str, str] = {}
    for dim in dims:
        name = sanitise(dim.name) or "dim"
        if name[0].isdigit() or name in C_KEYWORDS or _RESERVED.fullmatch(name):
            name = f"dim_{name}"
        found[dim.name] = local.unique(name)
    return found


def _signature(dims: Sequence[DimRecord], params: Mapping[str, str], extra: str = "") -> str:
    parts = [f"size_t {params[d.name]}" for d in dims] + ([extra] if extra else [])
    return ", ".join(parts) or "void"


def _dims_comment(dims: Sequence[DimRecord], params: Mapping[str, str]) -> str:
    def place(dim: DimRecord) -> str:
        if dim.argument is None or dim.axis is None:
            return ""
        return f" (argument {dim.argument}, axis {dim.axis})"

    def name(dim: DimRecord) -> str:
        param = params[dim.name]
        return param if param == dim.name else f"{param} (dim {dim.name})"

    return ", ".join(f"{name(d)} in [{d.lower}, {d.upper}]{place(d)}" for d in dims)


def dims_ok_function(function: FunctionReport, name: str, params: Mapping[str, str]) -> list[str]:
    """``int name(dims...)``: 1 when every dim is inside its range, else 0."""
    tests: list[str] = []
    for dim in function.dims:
        param = params[dim.name]
        if dim.lower > 0:  # a size_t is never below 0
            tests.append(f"{param} >= {_literal(dim.lower)}")
        tests.append(f"{param} <= {_literal(dim.upper)}")
    return [
        "",
        f"/* @{comment(function.name)}'s dims: {comment(_dims_comment(function.dims, params))}.",
        " * 1 when every dim is inside its range, else 0: the functions below give the plan",
        " * only for dims inside the ranges. */",
        f"static inline int {name}({_signature(function.dims, params)}) {{",
        f"    return {' && '.join(tests)};",
        "}",
    ]


@dataclass(frozen=True)
class PoolNames:
    """The C names of one parametric pool's macros and functions."""

    slots: str
    """The macro of the number of slots."""
    offsets: str
    size: str
    storage_slots: tuple[str, ...]
    """Per slot, the macro of the storage's index."""


def pool_functions(
    function: FunctionReport,
    pool: ParametricPoolRecord,
    names: PoolNames,
    helpers: Helpers,
    params: Mapping[str, str],
    taken: set[str],
) -> list[str]:
    """The slot macros, the overflow check, and the ``offsets`` and ``size``
    functions of ``pool``; fails the pass when a value the functions compute
    at the upper ends cannot be a ``size_t`` on any platform."""
    upper = {d.name: d.upper for d in function.dims}
    local = UniqueNames(taken | set(params.values()))
    offsets_name = local.unique("offsets")
    top = local.unique("top")
    size_names = [local.unique(f"size{k}") for k in range(len(pool.storages))]
    translate = _Translator(params, helpers, upper)
    unused = [params[d.name] for d in function.dims if d.name not in pool.dims]
    voids = [f"    (void){name};" for name in unused]

    sizes_at_upper = [size.evaluate(upper) for size in pool.sizes]
    offsets_at_upper = stack_offsets(
        range(len(pool.storages)), pool.above, pool.alignments, sizes_at_upper
    )
    for name, offset in zip(pool.storages, offsets_at_upper):
        translate.where = f"the offset of %{name}"
        translate.note(offset)
    needed = sorted({j for above in pool.above for j in above})
    body: list[str] = list(voids)
    for j in needed:
        translate.where = f"the size of %{pool.storages[j]} ({pool.sizes[j]})"
        body += _render(
            translate.expr(pool.sizes[j]),
            4,
            f"const size_t {size_names[j]} = ",
            ";",
            f" /* %{comment(pool.storages[j])} */",
        )
    for k, name in enumerate(pool.storages):
        ends: list[Node] = []
        translate.where = f"the offset of %{name}"
        for j in pool.above[k]:
            translate.note(offsets_at_upper[j] + sizes_at_upper[j])
            ends.append(f"{offsets_name}[{j}] + {size_names[j]}")
        value: Node = _balanced(helpers.max, ends) if ends else "0"
        if ends and pool.alignments[k] > 1:
            value = (helpers.align, [value, _literal(pool.alignments[k])])
        body += _render(value, 4, f"{offsets_name}[{k}] = ", ";", f" /* %{comment(name)} */")

    size_body: list[str] = [
        *voids,
        f"    size_t {offsets_name}[{names.slots}];",
        f"    size_t {top} = 0;",
        f"    {names.offsets}({', '.join([*(params[d.name] for d in function.dims), offsets_name])});",
    ]
    for k, name in enumerate(pool.storages):
        translate.where = f"the size of %{name} ({pool.sizes[k]})"
        translate.note(offsets_at_upper[k] + sizes_at_upper[k])
        end = f"{offsets_name}[{k}] + {_flat(translate.expr(pool.sizes[k]))}"
        size_body += _render(
            (helpers.max, [top, end]), 4, f"{top} = ", ";", f" /* %{comment(name)} */"
        )
    size_body.append(f"    return {top};")
    translate.where = f"pool @{pool.name}"
    translate.note(pool.at_upper)

    if translate.largest >= SIZE_T_LIMIT:
        raise PassFailedException(
            f"plan-report: computing {translate.largest_where} in @{function.name} reaches "
            f"{translate.largest} at the upper ends of the dims, more than a 64-bit size_t "
            f"holds: the C header cannot compute pool @{pool.name}"
        )
    where = f"@{comment(function.name)}'s pool @{comment(pool.name)}"
    count = len(pool.storages)
    return [
        "",
        f"/* {where}: {count} storage{'' if count == 1 else 's'} in its offset program,",
        f" * {_size_text(pool, names.size)} ({pool.at_lower} at the lower ends, "
        f"{pool.at_upper} at the upper ends). */",
        f"#if SIZE_MAX < {translate.largest}u",
        f'#error "size_t cannot hold {translate.largest}, which {names.size} reaches '
        'at the upper ends of the dims"',
        "#endif",
        f"#define {names.slots} {count}",
        *(
            f"#define {macro} {k} /* %{comment(name)} */"
            for k, (macro, name) in enumerate(zip(names.storage_slots, pool.storages))
        ),
        "/* Each storage's byte offset from the pool's base at the dims, by slot. */",
        f"static inline void {names.offsets}("
        f"{_signature(function.dims, params, f'size_t {offsets_name}[{names.slots}]')}) {{",
        *body,
        "}",
        "/* The pool's bytes at the dims. */",
        f"static inline size_t {names.size}({_signature(function.dims, params)}) {{",
        *size_body,
        "}",
    ]


def _size_text(pool: ParametricPoolRecord, function: str) -> str:
    text = str(pool.size_expr)
    return f"{comment(text)} bytes" if len(text) <= EXPRESSION_LIMIT else f"bytes: {function}"


def function_params(function: FunctionReport, taken: set[str]) -> dict[str, str]:
    """The C parameter names of ``function``'s dims."""
    return _param_names(function.dims, taken)
