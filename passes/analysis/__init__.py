"""IR -> facts: lifetimes of storages and tensors (imports xDSL).

This package holds THE lifetime definition of memplan (DESIGN.md, "Lifetimes").
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
    ``flow.classify_use``: views (``memdialect.aliases``: ``alloc_tensor`` and
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
    precise than DESIGN.md's "yielded out of its region"; documented
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
    hull of those ranges.

Exclusive regions
    ``branch`` is the path of ``(choice, region)`` pairs of the ``scf.if``/
    ``scf.index_switch`` ops enclosing the allocation (``choice`` = the op's
    number), outermost first, as ``passes.planning.Buffer.branch``: storages
    in two regions of one ``scf.if`` never conflict. Ifs inside a loop that
    the root outlives are dropped from the path (the loop may run both).

Module scope
    ``analyze_module`` lays functions out one after another on one time line
    (``time_offset``); a function called by another (``func.call``) gets the
    whole span of its callers for all its storages (``called_span``).

API
===

``analyze_function(func, pools=None) -> FunctionLifetimes``
``analyze_module(module) -> ModuleLifetimes``
``pools_of(module) -> tuple[Pool, ...]``  (``memory.pool`` ops, module order)

``FunctionLifetimes``: ``func``, ``name``, ``numbering: OpNumbering``,
``end``, ``storages: list[StorageLifetime]`` and ``tensors:
list[TensorLifetime]`` (pre-order), ``pools``, ``static_storages``,
``lifetime_of(value)``, ``storage_named(name)``, ``problem(pin=True) ->
Problem`` (static storages, buffer id = storage name), ``placements() ->
Solution`` (pinned storages), ``kill_points(lifetime) -> list[KillPoint]``
(where ``insert-kills`` puts kills), ``liveness[region]`` (multi-block scopes).

``Lifetime`` (base of both): ``value`` (the root), ``op`` (its alloc),
``name`` (unique per function and kind: SSA name hint or ``s<N>``/``t<N>``),
``label`` (``%hint`` for diagnostics), ``interval: LiveInterval``,
``escapes``, ``branch``, ``aliases``, ``uses`` ((Use, UseKind) pairs),
``kills`` (explicit ``memory.kill`` of the root), ``killed``, ``scope``,
``leaves_region``.
``StorageLifetime``: + ``tensors``, ``read_only`` (never written), ``alloc``,
``size`` (None if dynamic), ``alignment``, ``device``, ``candidates``,
``pinned`` ((pool, offset) or None), ``buffer(buffer_id=, interval=,
branch=, pin=True) -> Buffer``.
``TensorLifetime``: + ``storage``, ``alloc``, ``offset`` (None if dynamic),
``size`` (None if dynamic), ``alignment`` (element bytes), ``buffer()``.

``ModuleLifetimes``: ``module``, ``functions``, ``pools``, ``time_offset``,
``called_span``, ``function(name)``, ``storages()`` ((function, storage)
pairs), ``buffer_id(function, storage)`` (``"<func>.<storage>"``),
``module_interval(function, lifetime)``, ``module_buffer(function, storage,
pin=True)``, ``storage_by_buffer_id()``, ``problem(pin=True)``,
``placements()``.

``LiveInterval(start, end)``: half-open, ``overlaps``, ``shifted``.
``flow.classify_use(use) -> (UseKind, targets)``, ``flow.alias_closure(root)``.
"""

from passes.analysis.flow import UseKind, alias_closure, classify_use
from passes.analysis.lifetimes import (
    FunctionLifetimes,
    KillPoint,
    Lifetime,
    LiveInterval,
    ModuleLifetimes,
    RegionLiveness,
    StorageLifetime,
    TensorLifetime,
    analyze_function,
    analyze_module,
    pools_of,
)
from passes.analysis.numbering import BlockRange, OpNumbering

__all__ = [
    "BlockRange",
    "FunctionLifetimes",
    "KillPoint",
    "Lifetime",
    "LiveInterval",
    "ModuleLifetimes",
    "OpNumbering",
    "RegionLiveness",
    "StorageLifetime",
    "TensorLifetime",
    "UseKind",
    "alias_closure",
    "analyze_function",
    "analyze_module",
    "classify_use",
    "pools_of",
]
