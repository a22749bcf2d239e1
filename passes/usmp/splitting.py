"""Seeing through multi-tensor storages for ``usmp``: the storages that
``coalesce`` and ``reuse`` merged are also planned split into one storage
per tensor, and split in the IR where that is strictly smaller.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from math import lcm
from typing import Any

from xdsl.dialects.builtin import ModuleOp
from xdsl.dialects.func import FuncOp
from xdsl.ir import Block, Operation, Region, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from memplan.dialect.ops import (
    DEFAULT_STORAGE_ALIGNMENT,
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
    i64_attr,
)
from memplan.dialect.regions import ancestor_in_region, has_one_block
from memplan.passes.analysis import (
    ModuleLifetimes,
    OpNumbering,
    StorageLifetime,
    TensorLifetime,
    analyze_function,
)
from memplan.passes.planning.intervals import overlapping_live_pairs
from memplan.passes.planning.model import Buffer


@dataclass
class Fragment:
    """Tensors of one storage that must stay together, and the bytes they span.

    ``base`` is where the fragment starts in the old storage and ``size``
    runs from there to the highest tensor end. ``alignment`` is the largest
    that a tensor of the fragment needs: its `align` if it has one (a pass
    that merged its storage recorded what it had before), else the
    alignment its address has in the old storage: the storage's, or the
    largest power of two dividing its offset if that is smaller. A single
    tensor's fragment is exactly its bytes. A fragment of several tensors
    starts at the lowest offset rounded down to a multiple of that alignment
    and of every element size, so every tensor keeps the alignment it needs.
    """

    tensors: list[TensorLifetime]
    base: int
    size: int
    alignment: int
    anchor: Operation | None = None
    """The op the fragment's storage is created right before."""
    kill_after: Operation | None = None
    """The op its storage's kill goes right after (``kills_known``), if it gets one."""


@dataclass
class StorageSplit:
    """A storage to replace by one storage per fragment."""

    storage: StorageLifetime
    fragments: list[Fragment]
    kills_known: bool = True
    """Whether each fragment's ``kill_after`` is where `insert-kills` would
    kill its storage, read from the analysis the split was found with (a
    fragment in a single-block region); else the split function is analysed
    again to place the kills."""


def _anchor_in_block(op: Operation, block: Block) -> Operation | None:
    """The op of ``block`` that is ``op`` or holds it, if any."""
    current: Operation | None = op
    while current is not None and current.parent_block() is not block:
        current = current.parent_op()
    return current


def _encloses(outer: Region, inner: Region) -> bool:
    """``inner`` is ``outer`` or nested in it."""
    current: Region | None = inner
    while current is not None:
        if current is outer:
            return True
        parent = current.parent_op()
        current = parent.parent_region() if parent is not None else None
    return False


def _fragment_anchor(fragment: Fragment, storage: StorageLifetime) -> Operation | None:
    """Where the fragment's storage goes: before its first tensor, as deep as allowed.

    The home is the innermost region enclosing the scopes of all the
    fragment's tensors (where every alias of them is used), so a storage
    whose tensors live in one branch of an `scf.if` is created in that
    branch, as it was before a pass merged it. Within the old storage's
    region only, and only into a single-block region; ``None`` when the
    tensors' scopes reach a multi-block region.
    """
    scopes = [tensor.scope for tensor in fragment.tensors]
    home: Region | None = scopes[0]
    while home is not None and not all(_encloses(home, scope) for scope in scopes):
        parent = home.parent_op()
        home = parent.parent_region() if parent is not None else None
    outer = storage.alloc.parent_region()
    if home is None or outer is None or not _encloses(outer, home):
        return None
    if len(home.blocks) != 1:
        if home is not outer:
            return None
        block = storage.alloc.parent_block()
    else:
        block = home.block
    assert block is not None
    # Tensors are in pre-order: the first one's anchor comes first.
    return _anchor_in_block(fragment.tensors[0].alloc, block)


def _kill_anchor(fragment: Fragment, numbering: OpNumbering) -> tuple[bool, Operation | None]:
    """Where `insert-kills` would kill the fragment's storage once split:
    ``(known, op to kill after or None for no kill)``.

    Its uses are its tensors' `alloc_tensor` ops and every use of an alias of
    them, all inside its home region (``_fragment_anchor``). In a
    single-block home that is ``FunctionLifetimes.kill_points``' rule: right
    after the outermost op holding the last use, no kill when that op is a
    terminator or a tensor escapes. The split adds ops but reorders none, so
    the numbering of the unsplit function decides. A multi-block home is
    not known here (``known`` False).
    """
    assert fragment.anchor is not None
    home = fragment.anchor.parent_region()
    assert home is not None
    if not has_one_block(home):
        return False, None
    if any(tensor.escapes for tensor in fragment.tensors):
        return True, None
    last: Operation | None = None
    for tensor in fragment.tensors:
        users = [tensor.alloc, *(use.operation for use, _ in tensor.uses)]
        for user in users:
            candidate = ancestor_in_region(user, home)
            assert candidate is not None
            if last is None or numbering.end[candidate] > numbering.end[last]:
                last = candidate
    assert last is not None
    if last.has_trait(IsTerminator):
        return True, None
    return True, last


def _needed_alignment(tensor: TensorLifetime) -> int:
    """The address alignment a tensor at a static offset needs: its `align`, else what it has."""
    needed = tensor.alloc.required_alignment or tensor.alloc.address_alignment
    assert needed is not None
    return needed


def _fragments(storage: StorageLifetime) -> list[Fragment] | None:
    """The storage's tensors grouped into fragments, or ``None`` if it cannot split.

    It can split when it is static and not pinned, its value is only used by
    ``memory.alloc_tensor`` (static offset and shape) and ``memory.kill``,
    it holds two or more tensors, and every fragment has a home
    (``_fragment_anchor``). Two tensors are in one fragment when they share bytes while they
    conflict (an intended alias: they must keep their relative offsets); a
    valid plan inside a storage has no such pair, so usually every tensor is
    a fragment of its own.
    """
    if storage.is_dynamic or storage.pinned is not None or len(storage.tensors) < 2:
        return None
    block = storage.alloc.parent_block()
    if block is None:
        return None
    tensors_by_op = {tensor.alloc: tensor for tensor in storage.tensors}
    for use in storage.value.uses:
        user = use.operation
        if isinstance(user, KillOp):
            continue
        if not isinstance(user, AllocTensorOp) or user not in tensors_by_op:
            return None
        tensor = tensors_by_op[user]
        if tensor.offset is None or tensor.size is None:
            return None
    tensors = storage.tensors
    buffers = [tensor.buffer() for tensor in tensors]
    offsets: list[int] = []
    for tensor in tensors:
        assert tensor.offset is not None  # every tensor is a static use, checked above
        offsets.append(tensor.offset)
    parent = list(range(len(tensors)))

    def find(index: int) -> int:
        while parent[index] != index:
            parent[index] = parent[parent[index]]
            index = parent[index]
        return index

    # Tensors that share bytes while they conflict (a sweep, not all pairs).
    for i, j in overlapping_live_pairs(buffers, offsets):
        parent[find(j)] = find(i)
    members: dict[int, list[int]] = {}
    for index in range(len(tensors)):
        members.setdefault(find(index), []).append(index)
    fragments: list[Fragment] = []
    for group in members.values():
        # Each tensor needs its `align`, else the alignment its address has
        # in the old storage (the storage's, or less at an offset that is a
        # smaller power of two); powers of two, so the largest covers all.
        alignment = max(_needed_alignment(tensors[i]) for i in group)
        if len(group) == 1:
            # One tensor: exactly its bytes.
            (index,) = group
            fragments.append(
                Fragment([tensors[index]], offsets[index], buffers[index].size, alignment)
            )
            continue
        step = alignment
        for index in group:
            step = lcm(step, tensors[index].alignment)
        low = min(offsets[i] for i in group)
        high = max(offsets[i] + buffers[i].size for i in group)
        base = low - low % step
        fragments.append(Fragment([tensors[i] for i in group], base, high - base, alignment))
    if len(fragments) < 2:
        return None
    for fragment in fragments:
        fragment.anchor = _fragment_anchor(fragment, storage)
        if fragment.anchor is None:
            return None
    return fragments


def storage_splits(lifetimes: ModuleLifetimes) -> list[StorageSplit]:
    """The storages of the module that split into two or more fragments,
    with where each fragment's storage is killed when the old one was."""
    splits: list[StorageSplit] = []
    for function, storage in lifetimes.storages():
        fragments = _fragments(storage)
        if fragments is None:
            continue
        split = StorageSplit(storage, fragments)
        if storage.kills:
            for fragment in fragments:
                known, fragment.kill_after = _kill_anchor(fragment, function.numbering)
                split.kills_known = split.kills_known and known
        splits.append(split)
    return splits


def split_form_bound_buffers(storage: StorageLifetime, split: StorageSplit | None) -> list[Buffer]:
    """Buffers whose peak of live bytes bounds from below what ``storage``
    takes in the split form: the storage itself when it does not split,
    else each tensor that is a fragment on its own (its storage lives as
    the tensor does). A fragment of several tensors is left out and no
    alignment is counted, so the bound stays a bound. Times and ``scf.if``
    paths are the function's own: a plan of the module stacks, at any one
    time of a function, at least the bytes live in it then."""
    if split is None:
        return [replace(storage.buffer(pin=False), alignment=1)]
    return [
        replace(fragment.tensors[0].buffer(), alignment=1)
        for fragment in split.fragments
        if len(fragment.tensors) == 1
    ]


def _function_of(op: Operation) -> FuncOp | None:
    current = op.parent_op()
    while current is not None and not isinstance(current, FuncOp):
        current = current.parent_op()
    return current


class SplitEdits:
    """What ``apply_splits`` changed in the IR, in order, so that it can be
    put back exactly (``undo``) or made final (``commit``).

    ``usmp`` splits the module itself to plan the split form, instead of a
    copy: no clone, and the ops keep their identity (and so their source
    locations) whichever form is kept. The removed ops (old storages and
    their kills) are only detached until ``commit`` erases them.
    """

    def __init__(self) -> None:
        self._log: list[tuple[str, Any]] = []
        self._removed: list[Operation] = []

    def inserted(self, op: Operation) -> None:
        """``op`` was inserted."""
        self._log.append(("inserted", op))

    def remove(self, op: Operation) -> None:
        """Detach ``op``, remembering where it was."""
        block = op.parent_block()
        assert block is not None
        self._log.append(("removed", (op, block, op.next_op)))
        op.detach()
        self._removed.append(op)

    def retarget(self, op: AllocTensorOp) -> None:
        """``op``'s storage operand and properties are about to change."""
        self._log.append(("retargeted", (op, op.storage, dict(op.properties))))

    def keep_use_order(self, value: SSAValue) -> None:
        """Restore ``value``'s use list order on undo (uses are re-added in front)."""
        self._log.append(("uses", (value, list(value.uses))))

    def undo(self) -> None:
        """Put the IR back as it was before the splits, op for op."""
        for kind, entry in reversed(self._log):
            if kind == "inserted":
                Rewriter.erase_op(entry)
            elif kind == "removed":
                op, block, following = entry
                if following is None:
                    block.add_op(op)
                else:
                    block.insert_op_before(op, following)
            elif kind == "retargeted":
                op, storage, properties = entry
                op.operands[0] = storage
                op.properties.clear()
                op.properties.update(properties)
            else:
                value, uses = entry
                for use in uses:
                    value.remove_use(use)
                for use in reversed(uses):
                    value.add_use(use)
        self._log.clear()
        self._removed.clear()

    def commit(self) -> None:
        """Erase the removed ops for good (kills before the storages they use)."""
        for op in sorted(self._removed, key=lambda o: not isinstance(o, KillOp)):
            op.erase()
        self._log.clear()
        self._removed.clear()


def apply_splits(
    module: ModuleOp,
    splits: Sequence[StorageSplit],
    edits: SplitEdits | None = None,
) -> list[list[AllocStorageOp]]:
    """Replace each split storage by one storage per fragment.

    ``splits`` come from the analysis of ``module``. With ``edits``, every
    change is recorded there (``SplitEdits``: the old ops are detached, to
    be erased by ``commit`` or put back by ``undo``); without, the old ops
    are erased.

    A fragment's storage has the fragment's alignment and the old one's
    device and candidate pools, and is created right before the op holding
    its first tensor in the fragment's home block (``_fragment_anchor``);
    its tensors move to it at their offsets minus the fragment's base, and
    lose an `align` that their new place guarantees anyway. If
    the old storage was killed, the old kills go and each new storage is
    killed where `insert-kills` would put it (right after its last use); if
    not, none is. Returns the new storages of each split, fragment by fragment.
    """
    log = SplitEdits() if edits is None else edits
    created: list[list[AllocStorageOp]] = []
    # The new storages to kill, by function, and the op each kill follows
    # (None: no kill) when known without a new analysis of the function.
    to_kill: dict[FuncOp, list[AllocStorageOp]] = {}
    kill_after: dict[AllocStorageOp, Operation | None] = {}
    analyse: set[FuncOp] = set()
    for split in splits:
        old = split.storage.alloc
        killed = bool(split.storage.kills)
        func = _function_of(old)
        if func is not None:
            to_kill.setdefault(func, [])
            if killed and not split.kills_known:
                analyse.add(func)
        created.append([])
        log.keep_use_order(old.storage)
        for fragment in split.fragments:
            tensor_ops = [tensor.alloc for tensor in fragment.tensors]
            assert fragment.anchor is not None
            first = fragment.anchor
            new = AllocStorageOp(fragment.size)
            for key in ("device", "pools"):
                if key in old.properties:
                    new.properties[key] = old.properties[key]
            if fragment.alignment != DEFAULT_STORAGE_ALIGNMENT:
                new.properties["alignment"] = i64_attr(fragment.alignment)
            hints = [op.tensor.name_hint for op in tensor_ops]
            if len(tensor_ops) == 1 and hints[0]:
                new.storage.name_hint = f"{hints[0]}_storage"
            elif old.storage.name_hint:
                new.storage.name_hint = old.storage.name_hint
            Rewriter.insert_op(new, InsertPoint.before(first))
            log.inserted(new)
            created[-1].append(new)
            for op in tensor_ops:
                offset = op.static_offset
                assert offset is not None
                log.retarget(op)
                op.operands[0] = new.storage
                op.set_static_offset(offset - fragment.base)
                if op.required_alignment == op.address_alignment:
                    # Its own storage gives it exactly that: nothing to record.
                    op.set_required_alignment(None)
            if killed and func is not None:
                to_kill[func].append(new)
                kill_after[new] = fragment.kill_after
        for use in list(old.storage.uses):
            assert isinstance(use.operation, KillOp)
            log.remove(use.operation)
        log.remove(old)
    for func, storages in to_kill.items():
        if not storages:
            continue
        if func in analyse:
            _kill_by_analysis(func, storages, log)
            continue
        # In the new storages' pre-order, as `insert-kills` inserts them (two
        # kills after one op end up in the reverse of that order).
        wanted = set(storages)
        in_order = [op for op in func.walk() if isinstance(op, AllocStorageOp) and op in wanted]
        for storage in in_order:
            after = kill_after[storage]
            if after is not None:
                kill = KillOp(storage.storage)
                Rewriter.insert_op(kill, InsertPoint.after(after))
                log.inserted(kill)
    if edits is None:
        log.commit()
    return created


def _kill_by_analysis(func: FuncOp, storages: Sequence[AllocStorageOp], edits: SplitEdits) -> None:
    """Kill ``storages`` (new ones of ``func``) where `insert-kills` would,
    from a new analysis of ``func``."""
    wanted: set[SSAValue] = {storage.storage for storage in storages}
    lifetimes = analyze_function(func)
    for storage in lifetimes.storages:
        if storage.value not in wanted:
            continue
        for point in lifetimes.kill_points(storage):
            kill = KillOp(storage.value)
            Rewriter.insert_op(kill, point.insert_point())
            edits.inserted(kill)
