"""Lifetimes of a whole module on one time line, callees laid out inline.

See ``passes/analysis/__init__.py`` ("Module scope") for the definition.
``analyze_module`` works in four steps on the functions' own analyses
(``analyze_function``, which also records every ``func.call`` as a
``CallSite``):

1. lay the call graph out (``TimeLine``): top-level functions (no caller)
   one after another in module order; a called function's *segment* nested
   right after its first call met on that time line (its *home*), where the
   caller's later ops move up to make room. Each function has one segment,
   so its storages keep their own intervals, shifted into it; calls of a
   function that allocates nothing (with all it calls) are left out;
2. follow what callees hand back (``EscapeKind``): a value a function
   returns is live in each caller where the call's results are, and leaves
   that caller too if they do; a value that leaks (stored, pointer taken)
   is live from the call to the end of every caller, all the way up;
3. for every call, every value live across it in the caller (its own
   storages and tensors, and values that earlier calls handed back) is
   extended over the segments of every function the call may run;
4. refuse what one static place per storage cannot hold: recursion with
   storages, and a static storage still live (handed back by an earlier
   call) when a call runs its function again.

Cost: O(ops) for the layout, plus per function O(values x calls they are
live across); the hand-back sets reach a fixpoint in O(call-graph depth)
rounds.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from dataclasses import dataclass

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import SSAValue
from xdsl.utils.exceptions import PassFailedException

from memplan.passes.analysis.function_lifetimes import analyze_function, pools_of
from memplan.passes.analysis.lifetime_types import (
    CallSite,
    EscapeKind,
    FunctionLifetimes,
    Lifetime,
    LiveInterval,
    StorageLifetime,
)
from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution

Carried = dict[Lifetime, FunctionLifetimes]
"""Lifetimes (with the function that allocates them) handed from one function to another."""


@dataclass(frozen=True)
class TimeLine:
    """Where one function's op numbers fall on the module time line.

    The function's own ops take consecutive times from ``start``, except that
    right after each call numbered in ``nested_at`` (ascending) come the
    times of the segment of the callee whose home it is. ``nested_before[k]``
    is the total length of the first ``k`` of those segments; ``length``
    counts the function's ops (at least one) and every segment nested in it.
    """

    start: int
    length: int
    nested_at: tuple[int, ...] = ()
    nested_before: tuple[int, ...] = (0,)

    def time(self, number: int) -> int:
        """The module time of op ``number`` (of the function's end for ``end``)."""
        return self.start + number + self.nested_before[bisect_left(self.nested_at, number)]

    def interval(self, interval: LiveInterval) -> LiveInterval:
        """A function-local interval on the module time line."""
        return LiveInterval(self.time(interval.start), self.time(interval.end))

    @property
    def segment(self) -> LiveInterval:
        """The function's span: its own ops and the segments nested in it."""
        return LiveInterval(self.start, self.start + self.length)


@dataclass(eq=False)
class ModuleLifetimes:
    """Lifetimes of every function of a module, on one shared time line.

    ``timelines[name]`` places the function's op numbers on the module time
    line (``time_offset[name]`` is where its segment starts); ``homes[name]``
    is the call whose position holds a called function's segment (absent for
    functions without one: top level, or only called from their own cycle).
    ``intervals`` holds the module interval of every storage and tensor:
    its own interval mapped onto the time line, widened over where the
    value is live in callers (returned or leaked) and over the segments of
    every function called while it is live. Two storages of the module may
    be live together at run time only if their module intervals intersect
    (and no ``scf.if`` separates them), in any mode ``lower-to-memref``
    shares pool buffers across calls. Buffer ids are
    ``<function>.<storage name>``; branch choice ids are the choice ops'
    module times, so they stay unique.
    """

    module: ModuleOp
    functions: list[FunctionLifetimes]
    pools: tuple[Pool, ...]
    time_offset: dict[str, int]
    timelines: dict[str, TimeLine]
    homes: dict[str, CallSite]
    intervals: dict[Lifetime, LiveInterval]

    def function(self, name: str) -> FunctionLifetimes:
        for function in self.functions:
            if function.name == name:
                return function
        raise KeyError(name)

    @staticmethod
    def buffer_id(function: FunctionLifetimes, storage: StorageLifetime) -> str:
        return f"{function.name}.{storage.name}"

    def segment(self, function: FunctionLifetimes) -> LiveInterval:
        """``function``'s segment: its ops and the segments of the callees nested in it."""
        return self.timelines[function.name].segment

    def span(self, function: FunctionLifetimes) -> LiveInterval:
        """The hull of ``function``'s segment and the module intervals of its values.

        Values of two functions whose spans do not intersect are never live
        together, so the two can be planned apart.
        """
        segment = self.segment(function)
        lifetimes = [*function.storages, *function.tensors]
        intervals = [self.intervals[lifetime] for lifetime in lifetimes]
        return LiveInterval(
            min([segment.start, *(i.start for i in intervals)]),
            max([segment.end, *(i.end for i in intervals)]),
        )

    def module_buffer(
        self, function: FunctionLifetimes, storage: StorageLifetime, *, pin: bool = True
    ) -> Buffer:
        timeline = self.timelines[function.name]
        return storage.buffer(
            buffer_id=self.buffer_id(function, storage),
            interval=self.intervals[storage],
            branch=tuple((timeline.time(choice), region) for choice, region in storage.branch),
            pin=pin,
        )

    def storages(self) -> list[tuple[FunctionLifetimes, StorageLifetime]]:
        """Every storage of the module with its function, in module order."""
        return [(f, s) for f in self.functions for s in f.storages]

    def problem(self, *, pin: bool = True) -> Problem:
        """Every static storage of the module as one ``Problem`` over the pools."""
        return Problem(
            tuple(
                self.module_buffer(f, s, pin=pin) for f, s in self.storages() if s.size is not None
            ),
            self.pools,
        )

    def placements(self) -> Solution:
        """The plan already in the IR (pinned storages), keyed by module buffer id."""
        return Solution(
            {
                self.buffer_id(f, s): Placement(*s.pinned)
                for f, s in self.storages()
                if s.size is not None and s.pinned is not None
            }
        )


def _closure(direct: dict[str, list[str]], name: str) -> set[str]:
    """Every name reachable from ``name`` along ``direct`` (``name`` only on a cycle)."""
    seen: set[str] = set()
    work = list(direct[name])
    while work:
        current = work.pop()
        if current not in seen:
            seen.add(current)
            work.extend(direct[current])
    return seen


def _lay_out(
    functions: list[FunctionLifetimes], sites: dict[str, list[CallSite]]
) -> tuple[dict[str, TimeLine], dict[str, CallSite]]:
    """Time lines of every function and the home call of every nested one."""
    by_name = {function.name: function for function in functions}
    timelines: dict[str, TimeLine] = {}
    homes: dict[str, CallSite] = {}
    started: set[str] = set()

    def place(function: FunctionLifetimes, start: int) -> TimeLine:
        started.add(function.name)
        nested_at: list[int] = []
        nested_before = [0]
        for site in sites[function.name]:
            # Placed already, or being placed (a cycle): no segment here.
            if site.callee in started:
                continue
            homes[site.callee] = site
            callee = place(by_name[site.callee], start + site.number + 1 + nested_before[-1])
            nested_at.append(site.number)
            nested_before.append(nested_before[-1] + callee.length)
        timeline = TimeLine(
            start, max(function.end, 1) + nested_before[-1], tuple(nested_at), tuple(nested_before)
        )
        timelines[function.name] = timeline
        return timeline

    called = {site.callee for calls in sites.values() for site in calls}
    cursor = 0
    # Top-level functions first; then those only called from their own cycle.
    for function in sorted(functions, key=lambda f: f.name in called):
        if function.name not in started:
            cursor += place(function, cursor).length
    return timelines, homes


def _handed_back(
    functions: list[FunctionLifetimes], sites: dict[str, list[CallSite]]
) -> tuple[dict[str, Carried], dict[str, Carried]]:
    """Per function, the values its callers may see after it returns.

    ``returned[f]``: values that reach ``f``'s results only through
    ``func.return``: its own and those its calls return into results that
    ``f`` returns. ``leaked[f]``: values that may be reached in any other
    way: its own, those its callees leak, and those its calls return into
    results that leak from ``f``. A fixpoint, so call cycles are fine.
    """
    returned: dict[str, Carried] = {}
    leaked: dict[str, Carried] = {}
    for function in functions:
        returned[function.name] = {}
        leaked[function.name] = {}
        for lifetime in [*function.storages, *function.tensors]:
            if not lifetime.escapes:  # no use escapes: neither returned nor leaked
                continue
            kind = lifetime.escape_kind
            if kind is EscapeKind.RETURNED:
                returned[function.name][lifetime] = function
            elif kind is EscapeKind.LEAKED:
                leaked[function.name][lifetime] = function
    changed = True
    while changed:
        changed = False
        for function in functions:
            for site in sites[function.name]:
                flows: list[tuple[Carried, Carried]] = [
                    (leaked[site.callee], leaked[function.name])
                ]
                if site.results_escape is EscapeKind.RETURNED:
                    flows.append((returned[site.callee], returned[function.name]))
                elif site.results_escape is EscapeKind.LEAKED:
                    flows.append((returned[site.callee], leaked[function.name]))
                for source, target in flows:
                    for lifetime, owner in list(source.items()):
                        if lifetime not in target:
                            target[lifetime] = owner
                            changed = True
    return returned, leaked


def analyze_module(
    module: ModuleOp, printed: Mapping[SSAValue, str] | None = None
) -> ModuleLifetimes:
    """Lifetimes of every function with a body among ``module``'s top-level
    ops (``printed``: names as the IR is printed, see ``analyze_function``)."""
    pools = pools_of(module)
    functions = [
        analyze_function(op, pools, printed)
        for op in module.ops
        if isinstance(op, FuncOp) and not op.is_declaration
    ]
    by_name = {function.name: function for function in functions}
    # Calls of functions without a body (kernels, externals) allocate nothing
    # here, nor do calls of functions that, with all they call, have no
    # storage or tensor of their own (shape functions): no value of theirs
    # can meet a caller's, so they get no segment inside their callers and
    # values live across their calls are not widened over them.
    calls_with_body = {
        name: [site.callee for site in function.calls if site.callee in by_name]
        for name, function in by_name.items()
    }
    reached_with_body = {name: _closure(calls_with_body, name) for name in sorted(by_name)}
    allocating = {
        name
        for name, reached in reached_with_body.items()
        if any(by_name[other].storages or by_name[other].tensors for other in reached | {name})
    }
    sites = {
        function.name: [site for site in function.calls if site.callee in allocating]
        for function in functions
    }
    # Every function on a path to an allocating one allocates: what a
    # function reaches through allocating callees is what it reaches at all,
    # less what allocates nothing.
    callees = {name: reached & allocating for name, reached in reached_with_body.items()}
    reach = {name: reached | {name} for name, reached in callees.items()}
    for name, reached in callees.items():
        if name in reached and by_name[name].storages:
            raise PassFailedException(
                f"@{name} calls itself (directly or not) and allocates storages: "
                "recursive functions cannot be planned statically"
            )
    timelines, homes = _lay_out(functions, sites)
    reach_hull: dict[str, LiveInterval] = {}
    for name, reached in reach.items():
        segments = [timelines[other].segment for other in reached]
        reach_hull[name] = LiveInterval(
            min(s.start for s in segments), max(s.end for s in segments)
        )
    returned, leaked = _handed_back(functions, sites)

    hulls: dict[Lifetime, list[int]] = {}
    for function in functions:
        timeline = timelines[function.name]
        for lifetime in [*function.storages, *function.tensors]:
            own = timeline.interval(lifetime.interval)
            hulls[lifetime] = [own.start, own.end]

    def widen(lifetime: Lifetime, interval: LiveInterval) -> None:
        hull = hulls[lifetime]
        hull[0] = min(hull[0], interval.start)
        hull[1] = max(hull[1], interval.end)

    for function in functions:
        timeline = timelines[function.name]
        calls = sites[function.name]
        numbers = [site.number for site in calls]
        # What is live in this function, in its own numbers: its values, and
        # those its calls hand back (from the call that made them, or None).
        live: list[tuple[LiveInterval, Carried, CallSite | None]] = [
            (lifetime.interval, {lifetime: function}, None)
            for lifetime in [*function.storages, *function.tensors]
        ]
        for site in calls:
            back = returned[site.callee]
            results = site.results or LiveInterval(site.number, site.number + 1)
            if back:
                live.append((results, back, site))
            leaks = dict(leaked[site.callee])
            if site.results_escape is EscapeKind.LEAKED:
                leaks.update(back)
            if leaks:
                # Possibly reached until the end of the function (and beyond:
                # ``leaked`` carries them on to the callers).
                start = min(site.repeat_start, results.start)
                live.append((LiveInterval(start, function.end), leaks, site))
        for interval, values, origin in live:
            if origin is not None:
                for lifetime in values:
                    widen(lifetime, timeline.interval(interval))
            first = bisect_left(numbers, interval.start)
            last = bisect_left(numbers, interval.end)
            for site in calls[first:last]:
                if site is origin and interval.start == site.number:
                    continue  # made by this very call: not live across it
                for lifetime, owner in values.items():
                    widen(lifetime, reach_hull[site.callee])
                    if (
                        owner.name in reach[site.callee]
                        and isinstance(lifetime, StorageLifetime)
                        and lifetime.size is not None
                    ):
                        raise PassFailedException(
                            f"storage {lifetime.label} of @{owner.name} ({lifetime.size} bytes) "
                            f"is still live in @{function.name} at its call of "
                            f"@{site.callee} (op {site.number}), which allocates it again: "
                            "two instances of one storage cannot share one static place"
                        )
    intervals = {lifetime: LiveInterval(*hull) for lifetime, hull in hulls.items()}
    return ModuleLifetimes(
        module=module,
        functions=functions,
        pools=pools,
        time_offset={name: timeline.start for name, timeline in timelines.items()},
        timelines=timelines,
        homes=homes,
        intervals=intervals,
    )
