"""``plan-report{format=c-header prefix=P}``: the plan as a C header for embedded builds.

What the USMP RFC's generated ``metadata.h`` gives an application, for the
memory plan: per pool ``#define P_<POOL>_SIZE`` (the bytes the plan uses in
it, the module-wide ``used``) and ``#define P_<POOL>_ALIGNMENT``; per pinned
storage and per tensor at a static offset of one, ``#define
P_<FUNC>_<NAME>_OFFSET`` (bytes from the pool's base; a tensor's is its
storage's offset plus its own) and ``P_<FUNC>_<NAME>_PTR(pools)``, its
address given a ``struct p_pools *``; and ``typedef struct p_pools { uint8_t
*<pool>; ... } p_pools;`` with one base pointer per pool, in module order.
``P_PLANNED`` is 1 when every static storage is pinned, else 0 (so a build
can ``#error`` on an unplanned header). The header has an include guard
``P_MEMPLAN_H`` and compiles with ``gcc -std=c99 -Wall -Werror``.

Names
    A tensor an importer named (``memory.source_names`` on the invoke that
    writes it: the model's tensor name) takes that name, with the model's
    tensor index in its comment; a storage takes its first such tensor's
    name plus ``_storage``; the others take their SSA names.
    Macro names are upper case, struct members lower case; every run of
    characters outside ``[A-Za-z0-9]`` becomes ``_``. A name already taken
    gets ``_2``, ``_3``, ... before its suffix, so every name is unique; a
    member that is a C keyword gets a trailing ``_``, one starting with a
    digit a ``pool_`` prefix. ``prefix`` must be a C identifier; the
    default is the module's ``sym_name`` (sanitised; ``M_`` before a leading
    digit) or ``memplan``.

Unplanned modules
    Storages without ``at @pool[offset]`` have no offset: they are listed in
    a comment with their sizes (run ``--usmp``), ``P_PLANNED`` is 0, and each
    pool's ``SIZE`` is the bytes the pinned storages use (0 when none are).
    Dynamic-size storages are listed in a comment: they are sized at run
    time. A module without ``memory.pool`` ops has no struct (C99 has no
    empty structs).
"""

from __future__ import annotations

import re

from xdsl.utils.exceptions import PassFailedException

from memplan.passes.report_formats.c_functions import (
    PoolNames,
    dims_ok_function,
    function_params,
    helper_names,
    pool_functions,
)
from memplan.passes.report_formats.c_names import (
    C_KEYWORDS,
    UniqueNames,
    sanitise,
)
from memplan.passes.report_formats.c_names import comment as _comment
from memplan.passes.report_formats.common import buffer_kind, pool_label
from memplan.passes.report_formats.records import FunctionReport, PlanReport

DEFAULT_PREFIX = "memplan"

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def default_prefix(module_name: str | None) -> str:
    """The module's name as an identifier, or ``memplan``."""
    name = sanitise(module_name or "")
    if not name:
        return DEFAULT_PREFIX
    return f"M_{name}" if name[0].isdigit() else name


def _member_name(pool: str) -> str:
    name = sanitise(pool).lower() or "pool"
    if name[0].isdigit():
        name = f"pool_{name}"
    return f"{name}_" if name in C_KEYWORDS else name


def _function_block(
    function: FunctionReport,
    macro_prefix: str,
    members: dict[str, str],
    names: UniqueNames,
    stems: dict[str, str],
) -> tuple[list[str], list[str], list[str]]:
    """(offset lines, unplanned storages, dynamic storages) of one function;
    ``stems`` gets each pinned storage's macro stem (``<stem>_OFFSET``), and
    a storage with a slot in an offset program also takes ``<stem>_SLOT``."""
    lines: list[str] = []
    unplanned: list[str] = []
    dynamic: list[str] = []
    tensors_of: dict[str, list[int]] = {}
    for index, tensor in enumerate(function.tensors):
        tensors_of.setdefault(tensor.storage, []).append(index)
    function_stem = sanitise(function.name).upper() or "FUNC"

    def emit(name: str, what: str, offset: int, pool: str, slot: bool = False) -> str:
        stem = names.unique(
            f"{macro_prefix}_{function_stem}_{sanitise(name).upper() or 'VALUE'}",
            ("_OFFSET", "_PTR", "_SLOT") if slot else ("_OFFSET", "_PTR"),
        )
        lines.append(f"/* {_comment(what)} */")
        lines.append(f"#define {stem}_OFFSET {offset}")
        member = members.get(pool)
        if member is not None:
            lines.append(f"#define {stem}_PTR(pools) ((pools)->{member} + {stem}_OFFSET)")
        return stem

    for storage in function.buffers:
        # The model's names when the importer recorded them (`memory.source_names`).
        storage_name = (
            f"{storage.source_name}_storage" if storage.source_name is not None else storage.name
        )
        if storage.size is None:
            dynamic.append(f"%{storage.name} (@{function.name})")
            continue
        if storage.offset is None:
            unplanned.append(f"%{storage.name} (@{function.name}): {storage.size} bytes")
            continue
        slot = "" if storage.slot is None else f", slot {storage.slot}"
        stems[storage.name] = emit(
            storage_name,
            f"storage %{storage.name} ({buffer_kind(storage)}) in {pool_label(storage.pool)}: "
            f"{storage.size} bytes, align {storage.alignment}, "
            f"live [{storage.start}, {storage.end}){slot}",
            storage.offset,
            storage.pool,
            slot=storage.slot is not None,
        )
        for index in tensors_of.get(storage.name, ()):
            tensor = function.tensors[index]
            if tensor.offset is None:
                where = f"tensor %{tensor.name}: dynamic offset in %{storage.name}"
                lines.append(f"/* {_comment(where)} */")
                continue
            size = "dynamic size" if tensor.size is None else f"{tensor.size} bytes"
            source = (
                f" (model tensor {tensor.source_id} '{tensor.source_name}')"
                if tensor.source_name is not None
                else ""
            )
            emit(
                tensor.source_name if tensor.source_name is not None else tensor.name,
                f"tensor %{tensor.name}{source} in %{storage.name} at +{tensor.offset}: "
                f"{size}, live [{tensor.start}, {tensor.end})",
                storage.offset + tensor.offset,
                storage.pool,
            )
    return lines, unplanned, dynamic


def _parametric_lines(
    report: PlanReport, prefix: str, names: UniqueNames, stems: dict[str, dict[str, str]]
) -> list[str]:
    """The functions of the dims (``c_functions``) of every function with dims."""
    functions = [f for f in report.functions if f.dims or f.parametric]
    if not functions:
        return []
    lower, upper = prefix.lower(), prefix.upper()
    helpers = helper_names(lower, names)
    out = [
        "",
        "/* Plans as functions of the dynamic dims (usmp parametric=true). The _OFFSET",
        " * macros above are the plan at the largest sizes. At given dims, check the dims",
        f" * with {lower}_<func>_dims_ok; then {lower}_<func>_<pool>_offsets gives each",
        f" * storage's offset (index {upper}_<FUNC>_<NAME>_SLOT; a tensor adds its offset in",
        f" * its storage) and {lower}_<func>_<pool>_size the pool's bytes. */",
        *helpers.definitions(),
    ]
    for function in functions:
        function_stem = sanitise(function.name).lower() or "func"
        params = function_params(function, names.taken)
        if function.dims:
            out += dims_ok_function(
                function, names.unique(f"{lower}_{function_stem}_dims_ok"), params
            )
        for pool in function.parametric:
            pool_stem = f"{function_stem}_{sanitise(pool.name).lower() or 'pool'}"
            pool_names = PoolNames(
                slots=names.unique(f"{upper}_{pool_stem.upper()}_SLOTS"),
                offsets=names.unique(f"{lower}_{pool_stem}_offsets"),
                size=names.unique(f"{lower}_{pool_stem}_size"),
                storage_slots=tuple(f"{stems[function.name][name]}_SLOT" for name in pool.storages),
            )
            out += pool_functions(function, pool, pool_names, helpers, params, names.taken)
    return out


def format_c_header(report: PlanReport, prefix: str | None = None) -> str:
    """``report`` as a C99 header: pool sizes and alignments, offsets, a pool struct.

    ``prefix`` (a C identifier) starts every macro name; by default the
    module's name or ``memplan``. A prefix that is not an identifier fails
    the pass.
    """
    if prefix is not None and not _IDENTIFIER.match(prefix):
        raise PassFailedException(
            f"plan-report: prefix '{prefix}' is not a C identifier "
            "(letters, digits and '_', not starting with a digit)"
        )
    base = prefix if prefix is not None else default_prefix(report.module_name)
    macro_prefix = base.upper()
    type_name = f"{base.lower()}_pools"
    names = UniqueNames()
    guard = names.unique(f"{macro_prefix}_MEMPLAN_H")
    planned_macro = names.unique(f"{macro_prefix}_PLANNED")

    members: dict[str, str] = {}
    member_names = UniqueNames()
    for pool in report.pools:
        members[pool.name] = member_names.unique(_member_name(pool.name))

    pool_lines: list[str] = []
    for pool in report.pools:
        stem = names.unique(
            f"{macro_prefix}_{sanitise(pool.name).upper() or 'POOL'}", ("_SIZE", "_ALIGNMENT")
        )
        declared = "unbounded" if pool.size is None else f"declared size {pool.size}"
        pool_lines += [
            "",
            f"/* Pool {_comment(pool_label(pool.name))}: {pool.used} bytes used by the plan "
            f"(lower bound {pool.lower_bound}), {declared}, {pool.buffer_count} "
            f"storage{'' if pool.buffer_count == 1 else 's'}. */",
            f"#define {stem}_SIZE {pool.used}",
            f"#define {stem}_ALIGNMENT {pool.base_alignment}",
        ]

    offset_lines: list[str] = []
    unplanned: list[str] = []
    dynamic: list[str] = []
    stems: dict[str, dict[str, str]] = {}
    for function in report.functions:
        lines, function_unplanned, function_dynamic = _function_block(
            function, macro_prefix, members, names, stems.setdefault(function.name, {})
        )
        if lines:
            offset_lines += [
                "",
                f"/* @{_comment(function.name)}: byte offsets from the base of the pool. */",
                *lines,
            ]
        unplanned += function_unplanned
        dynamic += function_dynamic

    parametric = _parametric_lines(report, base, names, stems)

    module = f"module @{report.module_name}" if report.module_name else "the module"
    out = [
        f"/* Memory plan of {_comment(module)}: generated by memplan "
        "(plan-report format=c-header).",
        " *",
        f" * Allocate each pool as an array of {macro_prefix}_<POOL>_SIZE bytes aligned to",
        f" * {macro_prefix}_<POOL>_ALIGNMENT and pass the base addresses in struct {type_name};",
        f" * the bytes of a storage or tensor start at {macro_prefix}_<FUNC>_<NAME>_PTR(&pools).",
        " */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        *(["#include <stddef.h>"] if parametric else []),
        "#include <stdint.h>",
        "",
        "/* 1 when every static storage is pinned to a pool (planned), else 0. */",
        f"#define {planned_macro} {0 if unplanned else 1}",
        *pool_lines,
        *offset_lines,
    ]
    if unplanned:
        out += ["", "/* Not planned (no offset; run memplan-opt --usmp):"]
        out += [f" *   {_comment(item)}" for item in unplanned]
        out.append(" */")
    if dynamic:
        out += ["", "/* Dynamic-size storages (sized at run time, not in any pool):"]
        out += [f" *   {_comment(item)}" for item in dynamic]
        out.append(" */")
    if members:
        out += [
            "",
            "/* The base address of each pool, in module order. */",
            f"typedef struct {type_name} {{",
        ]
        out += [f"    uint8_t *{member};" for member in members.values()]
        out.append(f"}} {type_name};")
    else:
        out += ["", "/* No memory.pool in the module: no pool struct. */"]
    out += parametric
    out += ["", f"#endif /* {guard} */"]
    return "\n".join(out) + "\n"
