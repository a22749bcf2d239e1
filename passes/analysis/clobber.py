"""Clobbers in planned IR: a write landing on bytes a value still needs.

``find_clobbers(func, numbering)`` runs the function abstractly on the bytes
the plan gives its tensors, apart from how the plan was made (no lifetime,
no alias closure, no in-place decision of a pass is trusted):

- Each ``memory.alloc_tensor`` is an *atom*: bytes ``[lo, hi)`` of a space,
  the pool of its pinned storage (pin offset plus tensor offset) or else the
  storage itself. A dynamic shape reaches the storage's end (its bound), an
  over-approximation; a tensor at a dynamic offset, or in an unpinned
  storage inside a loop (each trip allocates other memory), is not tracked.
- A memref value is *bound* to the atoms it may be (a view to its source's;
  an ``scf.if``/``index_switch``/``execute_region`` result to those of the
  values yielded into it; ``scf.for``/``scf.while`` iteration arguments and
  results to those carried into them) with the time it was bound and
  whether its content was already overwritten then.
- Every write (``memory.invoke`` outs, ``memref.copy`` and ``memref.store``
  targets, ops with a write or unknown effect) paints its atoms' bytes with
  a new time and rebinds the written value (its new content). A read
  (``memory.invoke`` ins, ``memref.copy`` source, ``memref.load``,
  ``func.call`` operands, ``func.return``, unknown ops) of a value whose
  bytes were painted after it was bound is a clobber: the value is named,
  with the write and the value written.
- At an invoke, ins are read before outs are written, and an out whose bytes
  overlap an in is a clobber unless the kernel's ``memory.inplace`` declares
  that (result, operand) pair and both start at the same byte: the one
  overlap allowed (docs/dialect.md). One value passed as an in and an out
  of a kernel that declares no pair at all is the program's own choice.

Control flow: both branches of an ``scf.if`` run on copies of the state,
joined after (the later write time per byte; results bound to the union of
what the branches yield). A loop body runs once per distinct binding of its
iteration arguments at the loop head (so a double buffer's two bindings,
swapped by the yield, stay apart), until no new binding appears, then once
more on the head state that joins every iteration's writes, so a value read
in the body sees the writes of the iterations before. Each op is numbered
once (``OpNumbering``); the cost is that of a few passes over each loop body
times the bindings of its head, with a segment tree per space.

Not checked (skipped): functions with multi-block regions (``cf``
branches); memory that is not a storage's (arguments, globals), and writes
through results of ops other than views and ``scf`` region ops.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from xdsl.dialects import func, memref
from xdsl.dialects.builtin import MemRefType, UnrankedMemRefType
from xdsl.ir import Block, Operation, Region, SSAValue, Use

from memplan.dialect.numbering import OpNumbering
from memplan.dialect.op_model import (
    is_region_terminator,
    is_view_of_operand,
    loop_carried,
    reads_metadata_only,
    region_choice,
    successor_operands,
)
from memplan.dialect.ops import (
    AllocStorageOp,
    AllocTensorOp,
    InvokeOp,
    KillOp,
    inplace_pairs,
)
from memplan.dialect.regions import has_one_block
from memplan.dialect.types import static_byte_size
from memplan.passes.analysis.aliasing import writes
from memplan.passes.analysis.symbols import SymbolCache

_UNBOUNDED = 1 << 62
"""The end of a space whose size is unknown (an unbounded dynamic storage)."""

_MAX_HEAD_BINDINGS = 64
"""Distinct bindings of a loop's head analysed apart; beyond, they are merged
(a deterministic budget: merging only adds atoms, so it may report more)."""

_MAX_ROUNDS = 8
"""Passes over a loop's head bindings (two suffice unless bindings keep appearing)."""


@dataclass(frozen=True)
class Atom:
    """The bytes ``[lo, hi)`` of ``space`` one ``memory.alloc_tensor`` may occupy."""

    space: object
    lo: int
    hi: int
    tensor: SSAValue

    def overlaps(self, other: Atom) -> bool:
        return self.space == other.space and self.lo < other.hi and other.lo < self.hi

    def where(self) -> str:
        space = self.space
        name = f"@{space}" if isinstance(space, str) else "its storage"
        return f"bytes [{self.lo}, {self.hi}) of {name}"


@dataclass(frozen=True)
class Write:
    """One write: the op and the value it writes."""

    op: Operation
    value: SSAValue


@dataclass(frozen=True)
class Clobber:
    """``reader`` reads ``value`` (operand ``position``) after ``write`` overwrote
    its bytes (``atom``), or, when ``reader`` is ``write.op``, as an operand
    the in-place contract does not let that write overlap."""

    value: SSAValue
    reader: Operation
    position: int
    write: Write
    atom: Atom


_Key = tuple[tuple[frozenset[Atom], tuple[Write, Atom] | None], ...]
"""The bindings of a loop's head: per value its atoms and what overwrote it."""


@dataclass(frozen=True)
class _Binding:
    atoms: frozenset[Atom]
    time: int
    cause: tuple[Write, Atom] | None
    """Set when the content was already overwritten when the value was bound."""


class _Tree:
    """Max-of-times over a space's elementary byte segments (range chmax, range max).

    ``tag[node]`` is the latest time painted over the whole node, ``sub[node]``
    the latest painted anywhere under it; the pointwise max of two states is
    the elementwise max of their arrays.
    """

    __slots__ = ("size", "tag", "sub")

    def __init__(self, size: int, tag: list[int] | None = None, sub: list[int] | None = None):
        self.size = size
        self.tag = tag if tag is not None else [0] * (2 * size)
        self.sub = sub if sub is not None else [0] * (2 * size)

    def copy(self) -> _Tree:
        return _Tree(self.size, self.tag.copy(), self.sub.copy())

    def join(self, other: _Tree) -> _Tree:
        return _Tree(
            self.size,
            [max(a, b) for a, b in zip(self.tag, other.tag)],
            [max(a, b) for a, b in zip(self.sub, other.sub)],
        )

    def paint(self, lo: int, hi: int, time: int) -> None:
        tag, sub, n = self.tag, self.sub, self.size
        left, right = lo + n, hi + n
        while left < right:
            if left & 1:
                tag[left] = max(tag[left], time)
                sub[left] = max(sub[left], time)
                left += 1
            if right & 1:
                right -= 1
                tag[right] = max(tag[right], time)
                sub[right] = max(sub[right], time)
            left >>= 1
            right >>= 1
        for leaf in (lo + n, hi - 1 + n):
            node = leaf >> 1
            while node:
                sub[node] = max(sub[node], time)
                node >>= 1

    def latest(self, lo: int, hi: int) -> int:
        tag, sub, n = self.tag, self.sub, self.size
        best = 0
        for leaf in (lo + n, hi - 1 + n):
            node = leaf >> 1
            while node:
                best = max(best, tag[node])
                node >>= 1
        left, right = lo + n, hi + n
        while left < right:
            if left & 1:
                best = max(best, sub[left])
                left += 1
            if right & 1:
                right -= 1
                best = max(best, sub[right])
            left >>= 1
            right >>= 1
        return best


@dataclass
class _State:
    """What the abstract run knows at one point: bindings and painted bytes."""

    env: dict[SSAValue, _Binding]
    trees: dict[object, _Tree]
    owned: set[object] = field(default_factory=set[object])

    def copy(self) -> _State:
        return _State(dict(self.env), dict(self.trees))

    def tree(self, space: object) -> _Tree:
        if space not in self.owned:
            self.trees[space] = self.trees[space].copy()
            self.owned.add(space)
        return self.trees[space]


def _is_memref(value: SSAValue) -> bool:
    return isinstance(value.type, MemRefType | UnrankedMemRefType)


def _listed_pairs(decl: Operation | None) -> frozenset[tuple[int, int]]:
    """The (result, operand) pairs ``decl``'s `memory.inplace` lists."""
    return frozenset(inplace_pairs(decl))


class _ClobberRun:
    def __init__(self, function: func.FuncOp, numbering: OpNumbering) -> None:
        self.function = function
        self.numbering = numbering
        self.symbols = SymbolCache()
        self.clock = 0
        self.writes: list[Write | None] = [None]
        self.found: dict[tuple[Operation, int, Operation], Clobber] = {}
        self.atoms: dict[SSAValue, Atom] = {}
        self.coords: dict[object, list[int]] = {}
        self.segments: dict[Atom, tuple[int, int]] = {}
        self.canonical: dict[SSAValue, SSAValue] = {}

    # -- set-up ---------------------------------------------------------------

    def _atom(self, op: AllocTensorOp) -> Atom | None:
        """The bytes ``op``'s tensor may occupy; None where not tracked: a
        dynamic offset, or an unpinned storage that may be allocated anew
        (inside a loop) so that its instances are different memory."""
        storage = op.storage
        owner = storage.owner
        offset = op.static_offset
        if offset is None:
            return None
        base = 0
        space: object = storage
        end = _UNBOUNDED
        if isinstance(owner, AllocStorageOp):
            bound = owner.size_bound
            pinned = owner.pinned
            if pinned is not None and bound is not None:
                space, base = pinned
            elif _may_repeat(owner, self.function):
                return None
            if bound is not None:
                end = bound
        size = static_byte_size(op.tensor_type)
        if size == 0:
            return None  # no bytes: nothing can overwrite it
        if size is None:
            lo, hi = offset, max(end, offset + 1)
        else:
            lo, hi = offset, offset + max(size, 1)
        return Atom(space, base + lo, base + hi, op.tensor)

    def _build_spaces(self) -> None:
        points: dict[object, set[int]] = {}
        for op in self.numbering:
            if not isinstance(op, AllocTensorOp):
                continue
            atom = self._atom(op)
            if atom is not None:
                self.atoms[op.tensor] = atom
                points.setdefault(atom.space, set()).update((atom.lo, atom.hi))
        positions: dict[object, dict[int, int]] = {}
        for space, values in points.items():
            self.coords[space] = sorted(values)
            positions[space] = {c: i for i, c in enumerate(self.coords[space])}
        for atom in self.atoms.values():
            position = positions[atom.space]
            self.segments[atom] = (position[atom.lo], position[atom.hi])

    def _initial_state(self) -> _State:
        trees: dict[object, _Tree] = {}
        for space, coords in self.coords.items():
            size = 1
            while size < max(len(coords) - 1, 1):
                size *= 2
            trees[space] = _Tree(size)
        return _State({}, trees, set(trees))

    def canon(self, value: SSAValue) -> SSAValue:
        """``value`` through view-like ops to the value it views (not past a tensor)."""
        found = self.canonical.get(value)
        if found is not None:
            return found
        current = value
        while isinstance(current.owner, Operation) and not isinstance(current.owner, AllocTensorOp):
            owner = current.owner
            if not owner.operands or not is_view_of_operand(owner, 0):
                break
            current = owner.operands[0]
        self.canonical[value] = current
        return current

    def tick(self, write: Write | None = None) -> int:
        self.clock += 1
        self.writes.append(write)
        return self.clock

    # -- the abstract run -----------------------------------------------------

    def status(
        self, state: _State, value: SSAValue
    ) -> tuple[_Binding | None, tuple[Write, Atom] | None]:
        """The binding of ``value`` and what overwrote its content, if anything."""
        binding = state.env.get(self.canon(value))
        if binding is None:
            return None, None
        if binding.cause is not None:
            return binding, binding.cause
        for atom in self._ordered(binding.atoms):
            lo, hi = self.segments[atom]
            latest = state.trees[atom.space].latest(lo, hi)
            if latest > binding.time:
                write = self.writes[latest]
                assert write is not None
                return binding, (write, atom)
        return binding, None

    def _ordered(self, atoms: frozenset[Atom]) -> Iterable[Atom]:
        """``atoms`` in program order (one atom, the usual case, as it is)."""
        return atoms if len(atoms) == 1 else sorted(atoms, key=self._atom_order)

    def _atom_order(self, atom: Atom) -> tuple[int, int]:
        owner = atom.tensor.owner
        assert isinstance(owner, Operation)
        return self.numbering.index[owner], atom.lo

    def read(self, state: _State, op: Operation, position: int, value: SSAValue) -> None:
        _, cause = self.status(state, value)
        if cause is not None:
            self.report(Clobber(value, op, position, cause[0], cause[1]))

    def write(self, state: _State, op: Operation, value: SSAValue) -> None:
        key = self.canon(value)
        binding = state.env.get(key)
        if binding is None:
            return
        time = self.tick(Write(op, value))
        for atom in binding.atoms:
            lo, hi = self.segments[atom]
            state.tree(atom.space).paint(lo, hi, time)
        state.env[key] = _Binding(binding.atoms, time, None)

    def bind(
        self,
        state: _State,
        value: SSAValue,
        sources: Sequence[tuple[_Binding | None, tuple[Write, Atom] | None]],
    ) -> None:
        atoms: set[Atom] = set()
        cause: tuple[Write, Atom] | None = None
        for binding, source_cause in sources:
            if binding is None:
                continue
            atoms.update(binding.atoms)
            cause = cause or source_cause
        if atoms:
            state.env[value] = _Binding(frozenset(atoms), self.tick(), cause)
        else:
            state.env.pop(value, None)

    def report(self, clobber: Clobber) -> None:
        key = (clobber.reader, clobber.position, clobber.write.op)
        self.found.setdefault(key, clobber)

    def run_block(
        self, state: _State, block: Block
    ) -> list[tuple[_Binding | None, tuple[Write, Atom] | None]]:
        """Run ``block``'s ops; the status of what its terminator yields."""
        yielded: list[tuple[_Binding | None, tuple[Write, Atom] | None]] = []
        for op in block.ops:
            if op is block.last_op and is_region_terminator(op):
                yielded = [self.status(state, value) for value in successor_operands(op)]
                continue
            self.run_op(state, op)
        return yielded

    def run_op(self, state: _State, op: Operation) -> None:
        if isinstance(op, AllocTensorOp):
            atom = self.atoms.get(op.tensor)
            if atom is not None:
                state.env[op.tensor] = _Binding(frozenset((atom,)), self.tick(), None)
            return
        if isinstance(op, KillOp | AllocStorageOp) or reads_metadata_only(op):
            return
        if op.results and op.operands and is_view_of_operand(op, 0):
            return  # a view: canon() maps it to its source
        if isinstance(op, InvokeOp):
            self.run_invoke(state, op)
            return
        choice = region_choice(op)
        if choice is not None:
            self._branches(state, op, choice.regions, fallthrough=choice.may_skip)
            return
        carried = loop_carried(op)
        if carried is not None:
            self._loop(
                state, op, carried.inits, carried.head, carried.regions, carried.exits_at_condition
            )
            return
        if isinstance(op, memref.CopyOp):
            self.read(state, op, 0, op.source)
            self.write(state, op, op.destination)
            return
        if isinstance(op, memref.StoreOp):
            self.write(state, op, op.memref)
            return
        # Calls and returns read their operands; other ops write what their
        # effects say (an op without declared effects may write anything).
        written: list[int] = []
        if not isinstance(op, func.CallOp | func.ReturnOp | memref.LoadOp):
            written = [
                index
                for index, operand in enumerate(op.operands)
                if _is_memref(operand) and writes(Use(op, index))
            ]
        for index, operand in enumerate(op.operands):
            if _is_memref(operand) and index not in written:
                self.read(state, op, index, operand)
        for index in written:
            self.write(state, op, op.operands[index])
        for region in op.regions:
            # An op this check does not model: its regions run any number of times.
            for _ in range(2):
                for block in region.blocks:
                    self.run_block(state, block)

    def run_invoke(self, state: _State, op: InvokeOp) -> None:
        ins = list(op.ins)
        for index, value in enumerate(ins):
            if _is_memref(value):
                self.read(state, op, index, value)
        pairs = self._inplace_pairs(op)
        for result, out in enumerate(op.outs):
            out_binding = state.env.get(self.canon(out))
            if out_binding is None:
                continue
            for position, value in enumerate(ins):
                in_binding = state.env.get(self.canon(value)) if _is_memref(value) else None
                if in_binding is None:
                    continue
                # Every pair of places the two may be that share bytes; the
                # operand may be one of several (an scf.if result), so each
                # pair must be a declared in-place pair at the same start.
                overlapping = [
                    (a, b)
                    for b in self._ordered(in_binding.atoms)
                    for a in out_binding.atoms
                    if a.overlaps(b)
                ]
                if not overlapping:
                    continue
                overlap = overlapping[0][1]
                if (result, position) in pairs and all(
                    a.space == b.space and a.lo == b.lo for a, b in overlapping
                ):
                    continue
                if not pairs and self.canon(value) is self.canon(out):
                    # The program's own choice (one tensor read and written by
                    # a kernel that declares nothing), not the plan's.
                    continue
                self.report(Clobber(value, op, position, Write(op, out), overlap))
        for out in op.outs:
            self.write(state, op, out)

    def _inplace_pairs(self, op: InvokeOp) -> frozenset[tuple[int, int]]:
        return self.symbols.derived(self.symbols.lookup(op, op.callee), _listed_pairs)

    # -- region ops -------------------------------------------------------------

    def _branches(
        self, state: _State, op: Operation, regions: Iterable[Region], fallthrough: bool
    ) -> None:
        """Run exclusive ``regions`` (``fallthrough``: or none of them), join, bind results."""
        outcomes: list[tuple[_State, list[tuple[_Binding | None, tuple[Write, Atom] | None]]]] = []
        for region in regions:
            if region.first_block is None:
                continue
            branch = state.copy()
            outcomes.append((branch, self.run_block(branch, region.first_block)))
        if fallthrough or not outcomes:
            outcomes.append((state.copy(), []))
        self._join_into(state, [branch for branch, _ in outcomes])
        for index, result in enumerate(op.results):
            if _is_memref(result):
                sources = [yielded[index] for _, yielded in outcomes if index < len(yielded)]
                self.bind(state, result, sources)

    def _join_into(self, state: _State, branches: Sequence[_State]) -> None:
        """``state`` becomes the join of ``branches`` (copies of it, run on)."""
        trees: dict[object, _Tree] = {}
        for space in state.trees:
            joined = branches[0].trees[space]
            for branch in branches[1:]:
                if branch.trees[space] is not joined:
                    joined = joined.join(branch.trees[space])
            trees[space] = joined
        state.trees = trees
        state.owned = {
            space for space in trees if all(trees[space] is not b.trees[space] for b in branches)
        }
        # Values bound before the branches keep their binding unless a branch
        # rebound them (wrote them): then they are bound anew, overwritten if
        # they are in some branch.
        for value, binding in list(state.env.items()):
            others = [branch.env.get(value) for branch in branches]
            if all(other is binding for other in others):
                continue
            self.bind(state, value, [self.status(branch, value) for branch in branches])

    def _loop(
        self,
        state: _State,
        op: Operation,
        inits: Sequence[SSAValue],
        head: Sequence[SSAValue],
        body: Sequence[Region],
        results_from_condition: bool,
    ) -> None:
        """Run a loop: ``head`` values bound from ``inits`` or the back edge."""

        def key_of(statuses: Sequence[tuple[_Binding | None, tuple[Write, Atom] | None]]) -> _Key:
            return tuple((frozenset() if b is None else b.atoms, cause) for b, cause in statuses)

        entry = key_of([self.status(state, value) for value in inits])
        keys: dict[_Key, None] = {entry: None}
        head_state = state
        exits: list[list[tuple[_Binding | None, tuple[Write, Atom] | None]]] = []
        rounds = 0
        while True:
            rounds += 1
            ends: list[_State] = []
            done: set[_Key] = set()
            grew = False
            while len(done) < len(keys):
                if len(keys) > _MAX_HEAD_BINDINGS:
                    keys = {_merge_keys(keys): None}
                    done = set()
                for key in [k for k in keys if k not in done]:
                    done.add(key)
                    run = head_state.copy()
                    for value, (atoms, cause) in zip(head, key):
                        if atoms:
                            run.env[value] = _Binding(atoms, self.tick(), cause)
                    yielded: list[tuple[_Binding | None, tuple[Write, Atom] | None]] = []
                    for region in body:
                        block = region.first_block
                        assert block is not None
                        yielded = self.run_block(run, block)
                        if results_from_condition and region is body[0]:
                            exits.append(yielded)
                            after = body[1].first_block
                            assert after is not None
                            for value, (b, cause) in zip(after.args, yielded):
                                if b is not None:
                                    run.env[value] = _Binding(b.atoms, self.tick(), cause)
                    ends.append(run)
                    new = key_of(yielded)
                    if new not in keys:
                        keys[new] = None
                        grew = True
            head_state = state.copy()
            self._join_into(head_state, [state, *ends])
            if (rounds >= 2 and not grew) or rounds >= _MAX_ROUNDS:
                break
        self._join_into(state, [head_state])
        if not results_from_condition:
            exits = [
                [(_Binding(atoms, 0, cause) if atoms else None, cause) for atoms, cause in key]
                for key in keys
            ]
        for index, result in enumerate(op.results):
            if _is_memref(result):
                self.bind(state, result, [e[index] for e in exits if index < len(e)])

    def run(self) -> list[Clobber]:
        if any(
            not has_one_block(region)
            for op in [self.function, *self.numbering]
            for region in op.regions
            if region.first_block is not None
        ):
            return []
        self._build_spaces()
        state = self._initial_state()
        entry = self.function.body.first_block
        assert entry is not None
        self.run_block(state, entry)
        return sorted(
            self.found.values(),
            key=lambda c: (
                self.numbering.index[c.write.op],
                self.numbering.index[c.reader],
                c.position,
            ),
        )


def _may_repeat(op: Operation, function: Operation) -> bool:
    """Can ``op`` run more than once per call of ``function`` (a loop or an
    op this check does not model around it)?"""
    parent = op.parent_op()
    while parent is not None and parent is not function:
        if region_choice(parent) is None:
            return True
        parent = parent.parent_op()
    return False


def _merge_keys(
    keys: Iterable[tuple[tuple[frozenset[Atom], tuple[Write, Atom] | None], ...]],
) -> tuple[tuple[frozenset[Atom], tuple[Write, Atom] | None], ...]:
    merged: list[tuple[frozenset[Atom], tuple[Write, Atom] | None]] = []
    for key in keys:
        if not merged:
            merged = list(key)
            continue
        merged = [(a | b, ca or cb) for (a, ca), (b, cb) in zip(merged, key)]
    return tuple(merged)


def find_clobbers(function: func.FuncOp, numbering: OpNumbering | None = None) -> list[Clobber]:
    """Every clobber in ``function``'s planned IR, ordered by the writing op."""
    if function.is_declaration:
        return []
    return _ClobberRun(function, numbering or OpNumbering.of_region(function.body)).run()
