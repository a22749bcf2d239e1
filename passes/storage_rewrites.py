"""IR edits on storages shared by ``coalesce`` and ``reuse``.

Both passes merge several ``memory.alloc_storage``s into one new storage and
re-point the old storages' tensors at it; these helpers do that edit.
"""

from __future__ import annotations

from xdsl.dialects.arith import AddiOp, ConstantOp
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import Operation, SSAValue
from xdsl.rewriter import InsertPoint, Rewriter
from xdsl.traits import IsTerminator

from memplan.dialect.ops import (
    DEFAULT_DEVICE,
    DEFAULT_STORAGE_ALIGNMENT,
    AllocStorageOp,
    AllocTensorOp,
    KillOp,
)
from memplan.passes.analysis import StorageLifetime


def storage_only_feeds_tensors(storage: StorageLifetime) -> bool:
    """True when the storage value itself is only carved (``alloc_tensor``) or killed.

    A storage passed to a branch, yielded or given to any other op would
    need that op's types changed along with it; such storages are left alone.
    """
    for use in storage.value.uses:
        user = use.operation
        if isinstance(user, KillOp):
            continue
        if isinstance(user, AllocTensorOp) and use.index == 0:
            continue
        return False
    return True


def retarget_storage(old: AllocStorageOp, new: SSAValue, shift: int) -> None:
    """Move every tensor of ``old`` into ``new``, ``shift`` bytes further; drop ``old``'s kills.

    A static tensor offset becomes ``offset + shift``; a dynamic one gets an
    ``arith.addi`` of ``shift`` right before its ``alloc_tensor``. ``old``
    itself is left without uses (the caller erases it).

    ``new`` must be at least as aligned as ``old`` and ``shift`` a multiple
    of ``old``'s alignment, so every tensor stays as aligned as it was. A
    tensor at a static offset that lands more aligned than it was (a
    16-aligned member at offset 0 of a 128-aligned storage) gets `align`
    with the alignment it had, unless it already has one: that is all it
    needs, and what `usmp` gives it when it splits ``new``.
    """
    for use in tuple(old.storage.uses):
        user = use.operation
        if isinstance(user, KillOp):
            Rewriter.erase_op(user)
            continue
        assert isinstance(user, AllocTensorOp)
        had = user.address_alignment
        user.operands[0] = new
        offset = user.static_offset
        if offset is not None:
            user.set_static_offset(offset + shift)
            has = user.address_alignment
            if user.required_alignment is None and had and has and had < has:
                user.set_required_alignment(had)
            continue
        if shift == 0:
            continue
        dynamic = user.dynamic_offset
        assert dynamic is not None
        constant = ConstantOp(IntegerAttr(shift, IndexType()))
        shifted = AddiOp(dynamic, constant)
        Rewriter.insert_op([constant, shifted], InsertPoint.before(user))
        user.operands[1] = shifted.result


def new_storage_op(
    size: int, alignment: int, device: str, candidates: tuple[str, ...], name: str
) -> AllocStorageOp:
    """An ``alloc_storage`` with defaults left implicit (so it prints like hand-written IR)."""
    op = AllocStorageOp(
        size,
        alignment=None if alignment == DEFAULT_STORAGE_ALIGNMENT else alignment,
        device=None if device == DEFAULT_DEVICE else device,
        pools=candidates or None,
    )
    op.storage.name_hint = name
    return op


def is_terminator(op: Operation) -> bool:
    return op.has_trait(IsTerminator)
