"""IR -> facts: lifetimes of storages and tensors (imports xDSL).

This package holds THE lifetime definition of memplan (docs/design.md, "Lifetimes").
Every pass that needs "when is this buffer live" calls it; none recomputes it.

Definition
==========

Op numbers
    The ops of a function are numbered by a pre-order walk of its body (an op
    before the ops in its regions): the first body op is 0, ``func.end`` (the
    number of ops) is "the end of the function". ``OpNumbering`` also gives
    ``end[op]``, one past the last number inside ``op``.

Roots and aliases
    A root is the result of ``memory.alloc_storage`` (a storage) or
    ``memory.alloc_tensor`` (a tensor). Its aliases are found by
    ``aliasing.classify_use``: views (``memdialect.op_model``: ``alloc_tensor`` and
    ``memref`` view-like ops), branch operands -> block arguments
    (``cf.br``/``cond_br``/``switch``), ``scf.for`` inits -> iteration
    arguments and results, ``scf.while`` inits -> ``before`` arguments,
    ``scf.condition`` -> ``after`` arguments and results, ``scf.yield`` ->
    the parent's results (``scf.if``/``index_switch``/``execute_region``/
    ``for``) and the next iteration's arguments. A storage's aliases include
    its tensors and theirs.

Escapes
    A root escapes when an alias is returned (``func.return``), stored as a
    value (``memref.store`` operand 0), turned into a raw pointer, yielded by
    a terminator of a region op not listed above, or used by any op producing
    a value that could hold a reference (not an integer/index/float/vector;
    e.g. ``func.call`` returning a memref). An escaping root is live to the
    end of the function (its kill is ignored). Yielding out of an
    ``scf.if``/``for``/``while``/``execute_region`` is *not* an escape: the
    results are aliases, and the root lives until their last use (more
    precise than the design's "yielded out of its region"; documented
    deviation).

Scope and interval (half-open ``[start, end)``)
    The scope of a root is the innermost region holding its allocation and
    every use of every alias (the function body if it escapes); an
    ``scf.yield`` carrying an alias to the next iteration of a loop counts as
    a use by the loop op itself, so the scope lies outside that loop. Each use
    counts at its *anchor*, the outermost op holding it in the scope: the
    root is live until ``end[anchor]`` (so a use inside a loop keeps the
    root live for the whole loop). A ``memory.kill`` directly in the scope
    ends the interval at the kill's own number, ``[alloc, kill)``, so a
    buffer allocated right after the kill may reuse the bytes and inserting
    kills right after last uses changes no conflict. ``start`` is the
    allocation's number, or the start of the outermost loop between the
    allocation and the scope (the value then outlives an iteration). In a
    scope with several blocks, a backward liveness fixpoint over the blocks
    (``RegionLiveness``) extends the interval to cover every block that an
    alias defined in the scope is live into or out of; the interval is the
    hull of those ranges. There a ``memory.kill`` is not a use that makes a
    value live, and one in a block where the value is not (no allocation,
    other use, alias definition or live-in: ``insert-kills`` puts such kills
    at the start of a block entered from where the value was live) counts
    for nothing, so inserting kills never widens the hull.

Exclusive regions
    ``branch`` is the path of ``(choice, region)`` pairs of the ``scf.if``/
    ``scf.index_switch`` ops enclosing the allocation (``choice`` = the op's
    number), outermost first, as ``passes.planning.Buffer.branch``: storages
    in two regions of one ``scf.if`` never conflict. Ifs inside a loop that
    the root outlives are dropped from the path (the loop may run both).

Module scope (``analyze_module``, one time line for all functions)
    The call graph is laid out as an inlined time line. Functions no other
    function calls are *top level*: their segments follow one another in
    module order. A called function has one *segment* of the time line, of
    length = its op count plus the segments nested in it, placed right after
    its first call met on the time line (its *home*: the call's op gets its
    time, the callee's ops the next ones, the caller's later ops move up by
    the segment's length); a function only called from its own cycle gets a
    top-level segment after the others. A function that, with all it calls,
    has no storage or tensor (a shape function) has no value to meet
    anyone's: its calls get no segment and widen nothing. Every storage and tensor keeps its
    own interval, mapped into its function's segment (``TimeLine.time``), so
    a callee's storages overlap each other exactly as when it is planned
    alone. Then the interval is widened (its hull taken) with:

    - *live across a call*: a value live in the caller at a call (interval
      ``[start, end)`` holding the call's number; for what an earlier call
      handed back, see below) covers the segments of every function the
      call may run (the callee and all it calls, directly or not), wherever
      they sit: with several calls of one callee, a value live across a
      later one reaches back over the segment at the first;
    - *returned*: a value that leaves its function only through
      ``func.return`` (``EscapeKind.RETURNED``) is live, in each caller,
      where the call's results are (``CallSite.results``: the results
      followed like roots); if those are returned again, in the callers'
      callers, and so on;
    - *leaked*: a value that escapes in another way (stored, raw pointer,
      passed to an op returning a reference; or returned into results that
      leak) is live in every caller from the call (from the start of the
      outermost loop or CFG cycle around it: ``CallSite.repeat_start``) to
      the caller's end, all the way up the call graph.

    Soundness: whenever two storages are live at once at run time, the
    innermost running function's current op time lies in both module
    intervals (its own values hold it; values of functions further up the
    call stack, and values handed back to them, cover its segment), so a
    plan on these intervals never lets them share bytes, even when
    ``lower-to-memref`` passes one pool buffer to every call (``arg`` and
    ``global`` modes). One interval per buffer is the planning model's,
    hence one segment per function rather than one per call. Refused with
    ``PassFailedException``: a function that calls itself (directly or not)
    and allocates storages; a static storage still live (handed back by an
    earlier call) at a call that may run its function again, since both
    instances would need the one static place. ``scf.if`` choice ids become
    the choice ops' module times, unique in the module.

API
===

``analyze_function(func, pools=None) -> FunctionLifetimes``
``analyze_module(module) -> ModuleLifetimes``
``pools_of(module) -> tuple[Pool, ...]``  (``memory.pool`` ops, module order)

``FunctionLifetimes``: ``func``, ``name``, ``numbering: OpNumbering``,
``end``, ``storages: list[StorageLifetime]`` and ``tensors:
list[TensorLifetime]`` (pre-order), ``pools``, ``static_storages``,
``storage_named(name)``, ``problem(pin=True) ->
Problem`` (static storages, buffer id = storage name), ``placements() ->
Solution`` (pinned storages), ``kill_points(lifetime) -> list[KillPoint]``
(where ``insert-kills`` puts kills), ``liveness[region]`` (multi-block scopes).

``Lifetime`` (base of both): ``value`` (the root), ``op`` (its alloc),
``name`` (unique per function and kind: SSA name hint or ``s<N>``/``t<N>``),
``label`` (``%hint`` for diagnostics), ``interval: LiveInterval``,
``escapes``, ``branch``, ``aliases``, ``uses`` ((Use, UseKind) pairs),
``kills`` (explicit ``memory.kill`` of the root), ``killed``, ``scope``,
``leaves_region``, ``carrying_loop`` / ``carried_across_iterations``
(allocated inside a loop or ``cf`` cycle and still live, through iteration
arguments or a back-edge block argument, when the next trip allocates it
again: two instances live at once, which no static place holds; the passes
that place storages refuse it, with ``FunctionLifetimes.carried_diagnostic``).
``StorageLifetime``: + ``tensors``, ``read_only`` (never written), ``alloc``,
``size`` (None if dynamic), ``alignment``, ``device``, ``candidates``,
``pinned`` ((pool, offset) or None), ``buffer(buffer_id=, interval=,
branch=, pin=True) -> Buffer``.
``TensorLifetime``: + ``storage``, ``alloc``, ``offset`` (None if dynamic),
``size`` (None if dynamic), ``alignment`` (element bytes), ``buffer()``.

``StorageLifetime`` and ``TensorLifetime`` also have ``escape_kind``
(``EscapeKind.NONE``/``RETURNED``/``LEAKED``); ``FunctionLifetimes.calls``
lists its ``func.call`` ops as ``CallSite``s: ``op``, ``callee``, ``number``,
``results`` (``LiveInterval`` or None), ``results_escape``, ``repeat_start``.

``ModuleLifetimes``: ``module``, ``functions``, ``pools``, ``time_offset``
(segment start per function), ``timelines`` (``TimeLine`` per function:
``start``, ``length``, ``time(number)``, ``interval(local)``, ``segment``),
``homes`` (callee name -> the ``CallSite`` holding its segment),
``intervals`` (module interval per lifetime), ``function(name)``,
``segment(function)``, ``span(function)``
(hull of its segment and its values' module intervals: functions whose
spans do not meet never have values live together), ``storages()``
((function, storage) pairs), ``buffer_id(function, storage)``
(``"<func>.<storage>"``), ``module_buffer(function, storage, pin=True)``,
``problem(pin=True)``, ``placements()``.

``LiveInterval(start, end)``: half-open, ``overlaps``, ``shifted``.
``aliasing.classify_use(use) -> (UseKind, targets)``, ``aliasing.alias_closure(root)``;
``aliasing.AliasAnalysis``: the one may-alias analysis (``closure``,
``needed_at_or_after``) that manifest-alloc's in-place and loop-buffer
decisions and the in-place rule (``inplace.py``) ask.
"""

from memplan.dialect.numbering import BlockRange, OpNumbering
from memplan.passes.analysis.aliasing import (
    AliasAnalysis,
    Aliases,
    UseKind,
    alias_closure,
    classify_use,
)
from memplan.passes.analysis.function_lifetimes import analyze_function, pools_of
from memplan.passes.analysis.lifetime_types import (
    CallSite,
    EscapeKind,
    FunctionLifetimes,
    KillPoint,
    Lifetime,
    LiveInterval,
    StorageLifetime,
    TensorLifetime,
)
from memplan.passes.analysis.module_lifetimes import ModuleLifetimes, TimeLine, analyze_module
from memplan.passes.analysis.region_liveness import RegionLiveness

__all__ = [
    "AliasAnalysis",
    "Aliases",
    "BlockRange",
    "CallSite",
    "EscapeKind",
    "FunctionLifetimes",
    "KillPoint",
    "Lifetime",
    "LiveInterval",
    "ModuleLifetimes",
    "OpNumbering",
    "RegionLiveness",
    "StorageLifetime",
    "TensorLifetime",
    "TimeLine",
    "UseKind",
    "alias_closure",
    "analyze_function",
    "analyze_module",
    "classify_use",
    "pools_of",
]
