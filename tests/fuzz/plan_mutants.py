"""Plan mutants: sound-looking plans with one storage moved, judged twice.

Programs come from ``ProgramGenerator`` and are planned with
``manifest-alloc,insert-kills,coalesce,usmp``. Each pinned storage of a
plan is then moved, one mutant at a time: onto the offset of another
storage of its pool, one alignment step up, and one step down; and each
tensor at a static offset of a storage holding several (coalesced) the
same way within its storage. Every mutant is judged by

- the interpreter (``memplan.dialect.interpreter``, memory poisoned at
  allocation and kills, pools as large as their ``used``) against the
  value-semantic reference run of the original program, for both values of
  ``%cond``: a mutant is *unsound* when an output or a kernel's input bytes
  differ, or the run fails (a storage past its pool's end);
- ``verify-plan``, run as a pass on the mutant in memory (the module is not
  verified first: the ``memory.pool`` verifier would refuse some mutants
  before verify-plan sees them).

A campaign passes when every unsound mutant is rejected. Rejected sound
mutants are allowed (verify-plan may be conservative) and counted.

    python tests/fuzz/plan_mutants.py --programs 200 --seed 1
    pytest tests/fuzz/test_plan_mutants.py              # the CI-sized sample
"""

from __future__ import annotations

import argparse
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from math import lcm
from pathlib import Path
from typing import Any

if __name__ == "__main__":  # run as a script: tests/ on the path, as pytest puts it
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from fuzz.programs import ProgramGenerator, _apply, _run  # noqa: E402

PIPELINE = "coalesce,usmp"
"""What plans each program after ``manifest-alloc,insert-kills``."""


@dataclass
class Tally:
    """What a campaign found: counts, and the unsound mutants verify-plan accepted."""

    programs: int = 0
    mutants: int = 0
    unsound: int = 0
    rejected_sound: int = 0
    accepted_unsound: list[str] = field(default_factory=list[str])


def _pinned(module: Any) -> list[Any]:
    from memplan.dialect.ops import AllocStorageOp

    return [op for op in module.walk() if isinstance(op, AllocStorageOp) and op.pinned is not None]


def _pool_alignments(module: Any) -> dict[str, int]:
    from memplan.dialect.ops import PoolOp

    return {op.pool_name: op.alignment_value for op in module.ops if isinstance(op, PoolOp)}


def _carved(module: Any) -> list[Any]:
    """Tensors at static offsets of a storage that holds more than one."""
    from memplan.dialect.ops import AllocTensorOp

    tensors = [
        op for op in module.walk() if isinstance(op, AllocTensorOp) and op.offset is not None
    ]
    holders: dict[Any, int] = {}
    for op in tensors:
        holders[op.storage] = holders.get(op.storage, 0) + 1
    return [op for op in tensors if holders[op.storage] > 1]


Mutation = tuple[str, int, int, str]
"""``(kind, index, new offset, what)``: kind ``storage`` moves the index-th
pinned storage in its pool, ``tensor`` the index-th carved tensor in its
storage (both counted in walk order)."""


def _moves(offset: int, step: int, others: set[int]) -> Iterator[tuple[int, str]]:
    for target in sorted(others - {offset})[:3]:
        yield target, f"onto offset {target}"
    yield offset + step, f"up by {step}"
    if offset >= step:
        yield offset - step, f"down by {step}"


def mutations(planned: Any) -> Iterator[Mutation]:
    """Every mutant of ``planned``."""
    from memplan.dialect.types import element_byte_size

    storages = _pinned(planned)
    alignments = _pool_alignments(planned)
    for index, op in enumerate(storages):
        pool, offset = op.pinned
        step = lcm(op.alignment_value, alignments.get(pool, 1))
        others = {o.pinned[1] for o in storages if o.pinned[0] == pool}
        for target, what in _moves(offset, step, others):
            yield "storage", index, target, what
    tensors = _carved(planned)
    for index, op in enumerate(tensors):
        offset = op.offset.value.data
        step = element_byte_size(op.tensor_type)
        others = {t.offset.value.data for t in tensors if t.storage is op.storage}
        for target, what in _moves(offset, step, others):
            yield "tensor", index, target, what


def _verify_plan_rejects(module: Any) -> bool:
    from xdsl.utils.exceptions import PassFailedException

    from memplan.dialect.context import memplan_context
    from memplan.passes.verify_plan import VerifyPlanPass

    try:
        VerifyPlanPass().apply(memplan_context(), module)
    except PassFailedException:
        return True
    return False


def _sound(module: Any, expected: dict[tuple[str, bool], Any]) -> bool:
    from memplan.dialect.interpreter import ExecutionError

    try:
        return all(_run(module, *run) == want for run, want in expected.items())
    except ExecutionError:
        return False


def check_program(source: str, tally: Tally, *, until_accepted: bool = False) -> None:
    """Plan ``source``, mutate its plan, and judge every mutant into ``tally``
    (with ``until_accepted``, stop at the first unsound one verify-plan accepts)."""
    from xdsl.dialects.builtin import IntegerAttr
    from xdsl.utils.exceptions import PassFailedException

    from memplan_testing import parse_module, print_module

    original = parse_module(source, verify=True)
    names = [n for n in ("main", "other") if f"func.func @{n}(" in source]
    runs = [(n, c) for n in names for c in (False, True)]
    expected = {run: _run(original, *run, reference=True) for run in runs}
    try:
        planned = _apply(original.clone(), f"manifest-alloc,insert-kills,{PIPELINE}")
    except PassFailedException:
        return  # a bounded pool too small for the program: nothing to mutate
    tally.programs += 1
    for kind, index, offset, what in mutations(planned):
        mutant = planned.clone()
        if kind == "storage":
            storage = _pinned(mutant)[index]
            pool, before = storage.pinned
            storage.pin(pool, offset)
            moved = f"storage {storage.storage.name_hint} in @{pool}"
        else:
            tensor = _carved(mutant)[index]
            before = tensor.offset.value.data
            tensor.offset = IntegerAttr(offset, 64)
            moved = f"tensor {tensor.tensor.name_hint} in its storage"
        tally.mutants += 1
        sound = _sound(mutant, expected)
        rejected = _verify_plan_rejects(mutant)
        if not sound:
            tally.unsound += 1
            if not rejected:
                tally.accepted_unsound.append(
                    f"{moved} moved {what} (from {before}): unsound, accepted by "
                    f"verify-plan\n{print_module(mutant)}"
                )
                if until_accepted:
                    return
        elif rejected:
            tally.rejected_sound += 1


def campaign(
    programs: int, seed: int, max_calls: int = 25, *, until_accepted: bool = False
) -> Tally:
    """``programs`` programs from ``seed``, every mutant of each plan judged
    (with ``until_accepted``, up to the first unsound one verify-plan accepts)."""
    tally = Tally()
    for index in range(programs):
        source = ProgramGenerator(random.Random(seed * 1_000_003 + index), max_calls).program()
        check_program(source, tally, until_accepted=until_accepted)
        if until_accepted and tally.accepted_unsound:
            break
    return tally


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--programs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-calls", type=int, default=25)
    args = parser.parse_args(argv)
    tally = campaign(args.programs, args.seed, args.max_calls)
    for problem in tally.accepted_unsound:
        print(problem, end="\n\n")
    print(
        f"{tally.programs} programs planned, {tally.mutants} mutants: {tally.unsound} unsound "
        f"({len(tally.accepted_unsound)} accepted by verify-plan), "
        f"{tally.rejected_sound} sound ones rejected"
    )
    return 1 if tally.accepted_unsound else 0


if __name__ == "__main__":
    sys.exit(main())
