"""Hypothesis strategies and brute-force oracles shared by the planning tests."""

from __future__ import annotations

import itertools
import random

from hypothesis import strategies as st

from memplan.passes.planning.model import Buffer, Pool, Problem

# A consistent scf.if tree: choice 2 sits in region 0 of choice 1.
BRANCH_PATHS: list[tuple[tuple[int, int], ...]] = [
    (),
    ((1, 0),),
    ((1, 1),),
    ((1, 0), (2, 0)),
    ((1, 0), (2, 1)),
]


@st.composite
def buffers(
    draw: st.DrawFn,
    max_buffers: int = 12,
    branches: bool = True,
    pool_names: tuple[str, ...] = (),
    devices: tuple[str, ...] = ("cpu",),
) -> list[Buffer]:
    """Random buffers: sizes, lifetimes, alignments, branches, candidates, devices."""
    count = draw(st.integers(0, max_buffers))
    result = []
    for index in range(count):
        start = draw(st.integers(0, 12))
        candidates: tuple[str, ...] = ()
        if pool_names and draw(st.booleans()):
            candidates = tuple(
                draw(st.lists(st.sampled_from(pool_names), min_size=1, max_size=3, unique=True))
            )
        result.append(
            Buffer(
                f"b{index}",
                size=draw(st.integers(0, 40)),
                start=start,
                end=start + draw(st.integers(1, 6)),
                alignment=draw(st.sampled_from([1, 1, 2, 4, 8])),
                device=draw(st.sampled_from(devices)),
                candidates=candidates,
                read_only=draw(st.booleans()),
                branch=draw(st.sampled_from(BRANCH_PATHS)) if branches else (),
            )
        )
    return result


@st.composite
def problems(draw: st.DrawFn, max_buffers: int = 12, bounded: bool = True) -> Problem:
    """Random problems with 1-3 pools (sizes, alignments, targets, access)."""
    pool_count = draw(st.integers(1, 3))
    names = tuple(f"p{i}" for i in range(pool_count))
    pools = []
    for index, name in enumerate(names):
        size = draw(st.one_of(st.none(), st.integers(16, 200))) if bounded else None
        if index == pool_count - 1:
            size = None  # a last unbounded pool that every device may use
        pools.append(
            Pool(
                name,
                size=size,
                alignment=draw(st.sampled_from([1, 4, 16])),
                targets=None
                if index == pool_count - 1
                else draw(st.sampled_from([None, ("cpu",), ("npu",), ("cpu", "npu")])),
                access="rw" if index == pool_count - 1 else draw(st.sampled_from(["rw", "ro"])),
            )
        )
    found = draw(buffers(max_buffers, pool_names=names, devices=("cpu", "npu")))
    # Keep every buffer placeable somewhere: its candidates end with the last pool.
    fixed = [
        Buffer(
            b.id,
            b.size,
            b.start,
            b.end,
            b.alignment,
            b.device,
            b.candidates + ((names[-1],) if b.candidates and names[-1] not in b.candidates else ()),
            b.read_only,
            b.branch,
        )
        for b in found
    ]
    return Problem(tuple(fixed), tuple(pools))


def brute_force_peak(buffers: list[Buffer], pool_alignment: int = 1) -> int:
    """Minimal peak of one pool, by trying every bottom-left placement order.

    Every packing slides down to one where each buffer rests on the floor or on
    a conflicting buffer; placing buffers in offset order at the top of their
    placed conflicting neighbours rebuilds it, so the minimum over all orders
    is the optimum.
    """
    best = None
    alignments = [Pool("_", alignment=pool_alignment).alignment_for(b) for b in buffers]
    for order in itertools.permutations(range(len(buffers))):
        offsets: dict[int, int] = {}
        peak = 0
        for i in order:
            floor = max(
                (
                    offsets[j] + buffers[j].size
                    for j in offsets
                    if buffers[i].conflicts_with(buffers[j])
                ),
                default=0,
            )
            offsets[i] = -(-floor // alignments[i]) * alignments[i]
            peak = max(peak, offsets[i] + buffers[i].size)
        best = peak if best is None else min(best, peak)
    return best or 0


def tiled_buffers(count: int, seed: int, width: int = 1024, horizon: int = 64) -> list[Buffer]:
    """``count`` buffers that tile the ``horizon`` x ``width`` rectangle
    exactly (seeded guillotine cuts): ``width`` bytes are live at every time,
    so the lower bound is ``width`` and a plan reaches it (the tiling), but
    greedy orders rarely find it."""
    rng = random.Random(seed)
    pieces = [(0, horizon, 0, width)]
    while len(pieces) < count:
        index = max(
            range(len(pieces)),
            key=lambda k: (pieces[k][1] - pieces[k][0]) * pieces[k][3] * rng.random(),
        )
        start, end, offset, size = pieces[index]
        if rng.random() < 0.5 and end - start > 1:
            cut = rng.randrange(start + 1, end)
            pieces[index : index + 1] = [(start, cut, offset, size), (cut, end, offset, size)]
        elif size > 1:
            cut = rng.randrange(1, size)
            pieces[index : index + 1] = [
                (start, end, offset, cut),
                (start, end, offset + cut, size - cut),
            ]
    return [Buffer(f"b{k}", size, start, end) for k, (start, end, _, size) in enumerate(pieces)]


def tiled_csv(count: int, seed: int) -> str:
    """``tiled_buffers`` as a MiniMalloc CSV problem."""
    rows = [f"{b.id},{b.start},{b.end},{b.size}" for b in tiled_buffers(count, seed)]
    return "id,lower,upper,size\n" + "\n".join(rows) + "\n"
