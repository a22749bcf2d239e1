"""Checking a pass's options where it is built (a helper, not a pass).

Every memplan pass with options calls ``check_options(self, ...)`` from its
``__post_init__``, so that a bad option fails when the pass is constructed,
from Python (``UsmpPass(algorithm="fast")``), from a ``-p`` pipeline or from
a ``memplan-opt`` flag, with a ``ValueError`` naming the pass, the option and
what it takes::

    usmp: algorithm must be one of greedy-by-size, greedy-by-conflicts,
    hill-climb, exact, auto (got 'fast')

and never later, at apply time, as a ``KeyError`` or after other passes have
run and printed their remarks. The checks follow the dataclass fields' type
hints (``Literal`` choices, ``bool``, ``int``, numbers, strings, ``None``
where the hint allows it); ``non_negative`` adds what a hint cannot say,
and a pass checks anything else itself in its ``__post_init__``.
``memplan.tools.pipeline`` words its command-line messages with the same
functions.

``PlanningPassOptions`` is the one option set of the passes that plan
offsets.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from memplan.passes.planning.algorithms import DEFAULT_BUDGET, AlgorithmName, PlanOptions

_DEFAULTS = PlanOptions()


def strip_none(hint: Any) -> tuple[Any, ...]:
    """The non-None members of ``hint`` (a union or one type)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(a for a in typing.get_args(hint) if a is not type(None))
    return (hint,)


def allows_none(hint: Any) -> bool:
    """Whether ``hint`` is a union with None (``str | None``)."""
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and type(
        None
    ) in typing.get_args(hint)


def option_values_text(hint: Any) -> str:
    """What an option of type ``hint`` takes, for ``--help`` and diagnostics."""
    members = strip_none(hint)
    if len(members) == 1 and typing.get_origin(members[0]) is Literal:
        return "|".join(str(v) for v in typing.get_args(members[0]))
    names = set(members)
    if names == {bool}:
        return "true|false"
    if names <= {int, float} and float in names:
        return "<number>"
    if names == {int}:
        return "<integer>"
    return "<string>"


def option_problem(hint: Any, value: object) -> str | None:
    """Why ``value`` is not a value of type ``hint`` (``must be ...``), or None
    if it is."""
    if value is None and allows_none(hint):
        return None
    members = strip_none(hint)
    if len(members) == 1 and typing.get_origin(members[0]) is Literal:
        choices = typing.get_args(members[0])
        if value in choices:
            return None
        return f"must be one of {', '.join(str(c) for c in choices)} (got {value!r})"
    kinds = set(members)
    if kinds == {bool}:
        return None if isinstance(value, bool) else f"must be true or false (got {value!r})"
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if kinds <= {int, float} and float in kinds:
        return None if number else f"must be a number (got {value!r})"
    if kinds == {int}:
        if isinstance(value, int) and not isinstance(value, bool):
            return None
        return f"must be an integer (got {value!r})"
    if kinds == {str}:
        if isinstance(value, str):
            return None
        return f'must be a string (got {value!r}; quote it: "{value}")'
    return None


def check_options(pass_instance: Any, *, non_negative: Iterable[str] = ()) -> None:
    """Raise ``ValueError`` for the first option of ``pass_instance`` (a
    dataclass with a ``name``) whose value its type hint or ``non_negative``
    (numbers at least 0) rejects. The message is ``<pass>: <option> must ...
    (got ...)``."""
    hints = typing.get_type_hints(type(pass_instance))
    name = pass_instance.name
    for field in dataclasses.fields(pass_instance):
        value = getattr(pass_instance, field.name)
        shown = field.name.replace("_", "-")
        problem = option_problem(hints[field.name], value)
        if problem is not None:
            raise ValueError(f"{name}: {shown} {problem}")
    for option in non_negative:
        value = getattr(pass_instance, option)
        if value is not None and value < 0:  # None: not given (timeout)
            shown = option.replace("_", "-")
            raise ValueError(f"{name}: {shown} must be non-negative (got {value})")


@dataclass(frozen=True)
class PlanningPassOptions:
    """The options of every pass that plans offsets (``usmp``, ``coalesce``,
    ``plan``): the offset algorithm and ``PlanOptions``' knobs, one set, so
    each reaches every such pass the same way (a pass inherits them before
    its own options; ``plan`` forwards all of them to ``coalesce`` and
    ``usmp``). A new knob is a field here and its line in ``plan_options``.

    - ``algorithm``: a name of ``passes.planning.algorithms.ALGORITHMS``;
    - ``budget``: search nodes of the whole pass, shared by the problems it
      solves (``PlanOptions.budget``);
    - ``timeout``: an opt-in wall-clock limit in seconds, shared the same way;
    - ``seed``: ``hill-climb``'s random moves and ``exact``'s shuffled
      preorders (restarts at a capacity above the bound);
    - ``iterations``: ``hill-climb``'s perturbations;
    - ``minimize``: false stops ``exact``/``auto`` at the first plan that fits;
    - ``exact_max_buffers``: ``auto`` runs ``exact`` only on pools of at most
      this many buffers, else ``hill-climb``.
    """

    algorithm: AlgorithmName = "auto"
    budget: int = DEFAULT_BUDGET
    # `int` too: xDSL's option parser rejects `timeout=10` for a plain float.
    timeout: float | int | None = None
    seed: int = 0
    iterations: int = _DEFAULTS.iterations
    minimize: bool = _DEFAULTS.minimize
    exact_max_buffers: int = _DEFAULTS.exact_max_buffers

    NON_NEGATIVE: ClassVar[tuple[str, ...]] = (
        "budget",
        "timeout",
        "iterations",
        "exact_max_buffers",
    )
    """The options ``check_options`` must find at least 0."""

    def plan_options(self) -> PlanOptions:
        """These options as the algorithms take them (before a pass's share of
        the budget: ``PlanOptions.within``)."""
        return PlanOptions(
            budget=self.budget,
            timeout=self.timeout,
            seed=self.seed,
            iterations=self.iterations,
            minimize=self.minimize,
            exact_max_buffers=self.exact_max_buffers,
        )

    def planning_options(self) -> dict[str, Any]:
        """These options by field name, to build another planning pass with."""
        return {
            field.name: getattr(self, field.name)
            for field in dataclasses.fields(PlanningPassOptions)
        }
