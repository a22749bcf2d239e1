"""Lifetimes of storages and tensors: the analysis (``analyze_function``).

See ``passes/analysis/__init__.py`` for the definition and the API summary
and ``lifetime_types.py`` for the result types. This module computes them
in three steps per function:

1. number the ops in pre-order (``OpNumbering``);
2. for each root (an ``alloc_storage`` or ``alloc_tensor`` result) follow
   its aliases and their uses (``aliasing.alias_closure``) and find its *scope*:
   the innermost region holding its allocation and every use of an alias;
3. within the scope, every use counts at the end of its outermost ancestor
   op in the scope (so a use in a loop keeps the value live for the whole
   loop); in a scope with several blocks, a backward liveness fixpoint over
   the blocks (``RegionLiveness``) extends the interval over every block the
   value (or an alias defined in the scope) is live in or out of.

Every ``func.call`` is also recorded (``CallSite``: where its results live,
how they leave the function) for ``passes/analysis/module_lifetimes.py``,
which lays the functions of a module out on one time line.

Cost: one walk for the numbering, then per root O(uses of its aliases x
region depth), plus one bit-vector fixpoint per multi-block scope region.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import CallOp, FuncOp
from xdsl.ir import Block, BlockArgument, Operation, Region, SSAValue, Use

from memplan.dialect.numbering import OpNumbering
from memplan.dialect.op_model import has_exclusive_regions, is_loop, yields_to_next_iteration
from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
    PoolOp,
)
from memplan.dialect.regions import (
    ancestor_in_region,
    has_one_block,
    reachable_blocks,
    region_index,
)
from memplan.passes.analysis.aliasing import (
    Closure,
    UseKind,
    alias_closure,
    alias_closure_reusing,
    may_hold_reference,
    writes,
)
from memplan.passes.analysis.lifetime_types import (
    BranchPath,
    CallSite,
    FunctionLifetimes,
    LiveInterval,
    StorageLifetime,
    TensorLifetime,
    escape_kind,
)
from memplan.passes.analysis.region_liveness import RegionLiveness, defining_block
from memplan.passes.planning.model import Pool


def _unique_names(
    values: Sequence[SSAValue], prefix: str, printed: Mapping[SSAValue, str] | None = None
) -> list[str]:
    """The names ``printed`` gives (the names the IR is printed under), else
    name hints made unique in order; ``<prefix><N>`` for unnamed or taken ones."""
    if printed is not None and all(value in printed for value in values):
        return [printed[value] for value in values]
    hints = [value.name_hint for value in values]
    taken = {hint for hint in hints if hint}
    used: set[str] = set()
    names: list[str] = []
    for position, hint in enumerate(hints):
        name = hint if hint and hint not in used else None
        if name is None:
            name = f"{prefix}{position}"
            while name in used or (name in taken and name != hint):
                name += "_"
        used.add(name)
        names.append(name)
    return names


class _FunctionAnalyzer:
    """Builds a ``FunctionLifetimes`` (one instance per function)."""

    def __init__(
        self,
        func: FuncOp,
        pools: tuple[Pool, ...],
        printed: Mapping[SSAValue, str] | None = None,
    ) -> None:
        self.func = func
        self.pools = pools
        self.printed = printed
        self.body = func.body
        self.numbering = OpNumbering.of_region(self.body)
        # Straight-line code (one block, no op with regions, as an imported
        # graph): every scope is the body and every use its own anchor.
        self.flat = has_one_block(self.body) and not any(op.regions for op in self.numbering)

    def run(self) -> FunctionLifetimes:
        storage_ops = [op for op in self.numbering if isinstance(op, AllocStorageOp)]
        tensor_ops = [op for op in self.numbering if isinstance(op, AllocTensorOp)]
        call_ops = [op for op in self.numbering if isinstance(op, CallOp)]
        closures: dict[SSAValue, Closure] = {}
        scopes: dict[SSAValue, Region] = {}
        # Call results that may hold a reference are followed like roots: a
        # value the callee returns lives as long as they do.
        storage_roots = [op.results[0] for op in storage_ops]
        roots: list[SSAValue] = [
            *storage_roots,
            *(op.results[0] for op in tensor_ops),
            *(r for op in call_ops for r in op.results if may_hold_reference(r)),
        ]
        for root in roots[len(storage_roots) :]:
            closures[root] = alias_closure(root)
        # A storage's closure takes in its tensors': walked once, not twice.
        for root in storage_roots:
            closures[root] = alias_closure_reusing(root, closures)
        for root in roots:
            aliases, uses, escapes = closures[root]
            scopes[root] = self._scope(root, uses, escapes)
        liveness = self._region_liveness(roots, closures, scopes)
        storage_names = _unique_names([op.results[0] for op in storage_ops], "s", self.printed)
        tensor_names = _unique_names([op.results[0] for op in tensor_ops], "t", self.printed)
        storages: list[StorageLifetime] = []
        by_storage: dict[SSAValue, StorageLifetime] = {}
        for op, name in zip(storage_ops, storage_names):
            root = op.results[0]
            aliases, uses, escapes = closures[root]
            lifetime = StorageLifetime(
                **self._common(root, name, closures[root], scopes[root], liveness),
                carrying_loop=self._carrying_loop(op, aliases, liveness),
                read_only=not any(writes(use) for use, _ in uses),
            )
            storages.append(lifetime)
            by_storage[root] = lifetime
        tensors: list[TensorLifetime] = []
        for op, name in zip(tensor_ops, tensor_names):
            root = op.results[0]
            assert isinstance(op, AllocTensorOp)
            storage = by_storage.get(op.storage)
            lifetime = TensorLifetime(
                **self._common(root, name, closures[root], scopes[root], liveness),
                carrying_loop=self._carrying_loop(op, closures[root][0], liveness),
                storage=storage,
            )
            tensors.append(lifetime)
            if storage is not None:
                storage.tensors.append(lifetime)
        calls = [self._call_site(op, closures, scopes, liveness) for op in call_ops]
        return FunctionLifetimes(
            self.func, self.numbering, storages, tensors, self.pools, liveness, calls
        )

    def _call_site(
        self,
        op: CallOp,
        closures: dict[SSAValue, Closure],
        scopes: dict[SSAValue, Region],
        liveness: dict[Region, RegionLiveness],
    ) -> CallSite:
        intervals: list[LiveInterval] = []
        uses: list[tuple[Use, UseKind]] = []
        for result in op.results:
            if not may_hold_reference(result):
                continue
            common = self._common(result, "", closures[result], scopes[result], liveness)
            interval = common["interval"]
            assert isinstance(interval, LiveInterval)
            intervals.append(interval)
            uses.extend(closures[result][1])
        results = (
            LiveInterval(min(i.start for i in intervals), max(i.end for i in intervals))
            if intervals
            else None
        )
        # Leaked if any result leaks, else returned if any is returned.
        results_escape = escape_kind(uses)
        return CallSite(
            op=op,
            callee=op.callee.root_reference.data,
            number=self.numbering.index[op],
            results=results,
            results_escape=results_escape,
            repeat_start=self._repeat_start(op),
        )

    def _repeat_start(self, op: Operation) -> int:
        """The first op number from which ``op`` may run again (see ``CallSite``)."""
        numbering = self.numbering
        start = numbering.index[op]
        current = op
        while True:
            region = current.parent_region()
            block = current.parent_block()
            assert region is not None and block is not None
            if not has_one_block(region):
                for reached in reachable_blocks(block):
                    start = min(start, numbering.block_range[reached].start)
            parent = region.parent_op()
            if parent is None or parent is self.func:
                return start
            if is_loop(parent):
                start = min(start, numbering.index[parent])
            current = parent

    def _scope(self, root: SSAValue, uses: list[tuple[Use, UseKind]], escapes: bool) -> Region:
        if escapes or self.flat:
            return self.body
        owner = root.owner
        assert isinstance(owner, Operation)
        region = owner.parent_region()
        assert region is not None
        for use, kind in uses:
            user = use.operation
            if kind is UseKind.ALIAS and yields_to_next_iteration(user):
                # Carried to the next iteration: the loop itself uses it, so
                # the scope lies outside the loop and the value is live from
                # the loop's start (_start_and_branch).
                loop = user.parent_op()
                assert loop is not None
                user = loop
            while ancestor_in_region(user, region) is None:
                parent = region.parent_op()
                assert parent is not None and parent is not self.func
                outer = parent.parent_region()
                assert outer is not None
                region = outer
        return region

    def _region_liveness(
        self,
        roots: list[SSAValue],
        closures: dict[SSAValue, Closure],
        scopes: dict[SSAValue, Region],
    ) -> dict[Region, RegionLiveness]:
        """One liveness fixpoint per multi-block scope, over the aliases defined in it."""
        tracked: dict[Region, dict[SSAValue, None]] = {}
        for root in roots:
            scope = scopes[root]
            if has_one_block(scope):
                continue
            values = tracked.setdefault(scope, {})
            for alias in closures[root][0]:
                if defining_block(alias).parent_region() is scope:
                    values[alias] = None
        return {
            region: RegionLiveness(region, list(values), self.numbering)
            for region, values in tracked.items()
        }

    def _common(
        self,
        root: SSAValue,
        name: str,
        closure: Closure,
        scope: Region,
        liveness: dict[Region, RegionLiveness],
    ) -> dict[str, Any]:
        """The fields storages and tensors share, as keyword arguments."""
        aliases, uses, escapes = closure
        op = root.owner
        assert isinstance(op, Operation)
        numbering = self.numbering
        start, branch = self._start_and_branch(op, scope)
        end = numbering.index[op] + 1
        kills: list[KillOp] = []
        region_liveness = liveness.get(scope)
        present = (
            None
            if region_liveness is None
            else self._present_blocks(op, aliases, uses, scope, region_liveness)
        )
        # Anchors of the uses that count (kills where the value is dead do not).
        counted: list[Operation] = []
        flat = self.flat
        ends = numbering.end
        for use, kind in uses:
            user = use.operation
            anchor = user if flat else ancestor_in_region(user, scope)
            assert anchor is not None
            if kind is UseKind.KILL:
                if user.operands[0] is root:
                    assert isinstance(user, KillOp)
                    kills.append(user)
                if present is not None and anchor.parent_block() not in present:
                    # A kill where the value is dead anyway (insert-kills puts
                    # one at the start of a block entered from where it was
                    # live): nothing to end, and counting it would widen the hull.
                    continue
                if anchor is user:
                    # A kill ends the lifetime: [alloc, kill), so an allocation
                    # right after the kill may take the bytes.
                    counted.append(anchor)
                    end = max(end, numbering.index[user])
                    continue
            counted.append(anchor)
            end = max(end, ends[anchor])
        if region_liveness is not None:
            # Several blocks: block numbering need not follow control flow
            # (a block argument or a back edge may bring the value into an
            # earlier-numbered block), so every live point lowers the start.
            own_anchor = ancestor_in_region(op, scope)
            for anchor in counted:
                if anchor is not own_anchor:
                    start = min(start, numbering.index[anchor])
            for alias in aliases:
                bit = region_liveness.bit.get(alias)
                if bit is None:
                    continue
                if isinstance(alias, BlockArgument):
                    start = min(start, numbering.block_range[alias.block].start)
                start = min(start, region_liveness.first_live_in.get(bit, start))
                end = max(end, region_liveness.last_live_out.get(bit, end))
        if escapes:
            # Live to the end, and so through every later trip of a loop
            # around the allocation, earlier-numbered blocks included.
            end = len(numbering)
            start = min(start, self._repeat_start(op))
        end = max(end, start + 1)
        return {
            "value": root,
            "op": op,
            "name": name,
            "interval": LiveInterval(start, end),
            "escapes": escapes,
            "branch": branch,
            "aliases": tuple(aliases),
            "uses": tuple(uses),
            "kills": tuple(kills),
            "scope": scope,
        }

    def _carrying_loop(
        self,
        op: Operation,
        aliases: Sequence[SSAValue],
        liveness: dict[Region, RegionLiveness],
    ) -> Operation | Block | None:
        """The loop or CFG cycle that carries the previous trip's value to ``op``.

        Every alias is defined after the allocation ``op`` in the same trip,
        so an alias live where ``op`` (or the op holding it) runs is the
        previous trip's instance, brought in through iteration arguments or
        a block argument. Checked in each block around ``op``: an alias
        defined in it before that point (or, in a multi-block region, live
        into it) and used at or after it (or live out of it).
        """
        if op.parent_block() is self.body.first_block and has_one_block(self.body):
            # Code at the top of a one-block body runs once: no previous
            # trip (and every alias is defined after ``op``).
            return None
        index = self.numbering.index
        current = op
        while current is not self.func:
            region = current.parent_region()
            block = current.parent_block()
            assert region is not None and block is not None
            defined = [a for a in aliases if defining_block(a).parent is region]
            live_in = live_out = 0
            region_liveness: RegionLiveness | None = None
            if defined and not has_one_block(region):
                region_liveness = liveness.get(region)
                if region_liveness is None or any(a not in region_liveness.bit for a in defined):
                    region_liveness = RegionLiveness(region, defined, self.numbering)
                live_in = region_liveness.live_in[block]
                live_out = region_liveness.live_out[block]
            for alias in defined:
                bit = -1 if region_liveness is None else region_liveness.bit[alias]
                defined_before = defining_block(alias) is block and (
                    isinstance(alias, BlockArgument) or index[alias.owner] < index[current]  # type: ignore[index]
                )
                if not (defined_before or (bit >= 0 and live_in >> bit & 1)):
                    continue
                if (bit >= 0 and live_out >> bit & 1) or any(
                    not isinstance(u.operation, KillOp)
                    and (anchor := ancestor_in_region(u.operation, region)) is not None
                    and anchor.parent_block() is block
                    and index[anchor] >= index[current]
                    for u in alias.uses
                ):
                    return self._carrier(block)
            parent = region.parent_op()
            assert parent is not None
            current = parent
        return None

    def _carrier(self, block: Block) -> Operation | Block:
        """The innermost loop op around ``block``, or the block of a multi-block region."""
        current: Block = block
        while True:
            region = current.parent
            assert region is not None
            if not has_one_block(region):
                return current
            parent = region.parent_op()
            assert parent is not None
            if is_loop(parent) or parent is self.func:
                return parent
            outer = parent.parent_block()
            assert outer is not None
            current = outer

    def _present_blocks(
        self,
        op: Operation,
        aliases: Sequence[SSAValue],
        uses: Sequence[tuple[Use, UseKind]],
        scope: Region,
        region_liveness: RegionLiveness,
    ) -> set[Block]:
        """Blocks of a multi-block ``scope`` where the value is (kills aside).

        The block of the allocation, those holding a use other than a kill
        or defining an alias, and those an alias is live into.
        """
        present: set[Block] = set()
        for user in [op, *(use.operation for use, kind in uses if kind is not UseKind.KILL)]:
            anchor = ancestor_in_region(user, scope)
            if anchor is not None and anchor.parent_block() is not None:
                present.add(anchor.parent_block())  # type: ignore[arg-type]
        for alias in aliases:
            block = defining_block(alias)
            if block.parent is scope:
                present.add(block)
            bit = region_liveness.bit.get(alias)
            if bit is not None:
                present.update(region_liveness.live_in_blocks.get(bit, ()))
        return present

    def _start_and_branch(self, op: Operation, scope: Region) -> tuple[int, BranchPath]:
        """Start number and exclusive-region path of a value allocated by ``op``.

        Inside the scope the value starts at its allocation, unless a loop
        lies between the allocation and the scope: then the value outlives an
        iteration, so it is live from the loop's start, and the ``scf.if``
        choices inside that loop no longer separate it from anything.
        """
        numbering = self.numbering
        start = numbering.index[op]
        inner: list[tuple[int, int]] = []
        outer: list[tuple[int, int]] = []
        current = op
        crossed_scope = False
        while True:
            region = current.parent_region()
            parent = region.parent_op() if region is not None else None
            if parent is None or parent is self.func:
                break
            if region is scope:
                crossed_scope = True
            assert region is not None
            if has_exclusive_regions(parent):
                entry = (numbering.index[parent], region_index(parent, region))
                (outer if crossed_scope else inner).append(entry)
            elif is_loop(parent) and not crossed_scope:
                start = numbering.index[parent]
                inner.clear()
            current = parent
        path = [*inner, *outer]
        path.reverse()
        return start, tuple(path)


def pools_of(module: ModuleOp | None) -> tuple[Pool, ...]:
    """The module's ``memory.pool`` ops as planning ``Pool``s, in module order."""
    if module is None:
        return ()
    return tuple(
        Pool(
            name=op.pool_name,
            size=op.byte_size,
            alignment=op.alignment_value,
            targets=op.target_names,
            access="ro" if op.is_read_only else "rw",
        )
        for op in module.ops
        if isinstance(op, PoolOp)
    )


def _enclosing_module(op: Operation) -> ModuleOp | None:
    parent = op.parent_op()
    while parent is not None and not isinstance(parent, ModuleOp):
        parent = parent.parent_op()
    return parent


def analyze_function(
    func: FuncOp,
    pools: tuple[Pool, ...] | None = None,
    printed: Mapping[SSAValue, str] | None = None,
) -> FunctionLifetimes:
    """Lifetimes of ``func``'s storages and tensors (``func`` must have a body).

    ``pools`` defaults to the ``memory.pool`` ops of the enclosing module.
    ``printed`` (``memplan.dialect.printer.printed_names``) names storages
    and tensors as the printed IR does; without it they are named after
    their hints, made unique.
    """
    if pools is None:
        pools = pools_of(_enclosing_module(func))
    if func.is_declaration:
        raise ValueError(f"@{func.sym_name.data} is a declaration")
    return _FunctionAnalyzer(func, pools, printed).run()
