"""How ``usmp`` groups functions into planning problems.

Functions that call each other are planned together (``scope=function``),
or every function on the module time line (``scope=module``); each group is
one planning ``Problem``. Pools are linked into components when one storage
may use several of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from memplan.passes.analysis import (
    FunctionLifetimes,
    LiveInterval,
    ModuleLifetimes,
    StorageLifetime,
)
from memplan.passes.planning.bounds import pool_groups
from memplan.passes.planning.model import Buffer, Problem

PlanningScope = Literal["function", "module"]


@dataclass
class Group:
    """Functions planned together: one ``Problem`` on one time line."""

    functions: list[FunctionLifetimes]
    storages: dict[str, tuple[FunctionLifetimes, StorageLifetime]]
    problem: Problem


Component = str | None
"""A set of pools linked by storages that may use several of them, named by
its first pool; ``None`` for storages that may use no pool at all."""


def pool_components(lifetimes: ModuleLifetimes) -> dict[str, str]:
    """Each pool's component: pools are linked when one storage may use both.

    Plans of different components never interact (no storage can move from
    one to the other), so each can be chosen on its own.
    """
    return pool_groups(lifetimes.problem())


def planning_groups(
    lifetimes: ModuleLifetimes, scope: PlanningScope
) -> list[list[FunctionLifetimes]]:
    """The functions to plan together, in module order.

    With ``scope="module"`` that is every function. With ``"function"`` it is
    each function on its own, except that functions whose spans on the module
    time line overlap (one calls the other, so their storages can be live
    together) form one group: planning them apart could give a caller's and
    a callee's live storages the same bytes.
    """
    functions = lifetimes.functions
    if scope == "module" or not functions:
        return [list(functions)] if functions else []
    spans: list[tuple[LiveInterval, int]] = []
    for index, function in enumerate(functions):
        spans.append((lifetimes.span(function), index))
    spans.sort(key=lambda item: (item[0].start, item[1]))
    groups: list[list[int]] = []
    reach = -1
    for span, index in spans:
        if groups and span.start < reach:
            groups[-1].append(index)
            reach = max(reach, span.end)
        else:
            groups.append([index])
            reach = span.end
    return [[functions[i] for i in sorted(group)] for group in sorted(groups, key=min)]


def build_group(
    lifetimes: ModuleLifetimes, functions: Sequence[FunctionLifetimes], *, pin: bool = True
) -> Group:
    """The static storages of ``functions`` as one ``Problem`` on the module time line."""
    storages: dict[str, tuple[FunctionLifetimes, StorageLifetime]] = {}
    buffers: list[Buffer] = []
    for function in functions:
        for storage in function.static_storages:
            buffer = lifetimes.module_buffer(function, storage, pin=pin)
            storages[buffer.id] = (function, storage)
            buffers.append(buffer)
    return Group(list(functions), storages, Problem(tuple(buffers), lifetimes.pools))
