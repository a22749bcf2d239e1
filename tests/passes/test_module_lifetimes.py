"""Lifetimes across functions (``analyze_module``) and storages carried by loops."""

from __future__ import annotations

import pytest
from lifetime_programs import RECURSIVE, TENSOR, TWO_INSTANCES, function_named
from xdsl.ir import Block, Operation
from xdsl.utils.exceptions import PassFailedException

from memplan.passes.analysis import (
    EscapeKind,
    LiveInterval,
    analyze_function,
    analyze_module,
)
from memplan.passes.planning.model import Buffer
from memplan_testing import (
    parse_module,
    run_passes,
)

# ---------------------------------------------------------------------------
# Examples and API
# ---------------------------------------------------------------------------

CALLS = f"""
memory.pool @sram size 1024
func.func private @use({TENSOR})
func.func @helper() {{
  %h = memory.alloc_storage : !memory.storage<16>
  func.return
}}
func.func @main() {{
  %m = memory.alloc_storage : !memory.storage<16>
  %tm = memory.alloc_tensor %m[0] : !memory.storage<16> -> {TENSOR}
  func.call @helper() : () -> ()
  memory.invoke @use ins(%tm : {TENSOR})
  func.return
}}
func.func @last() {{
  %z = memory.alloc_storage pools [@sram] : !memory.storage<32>
  func.return
}}
"""


def test_module_problem_lays_functions_out_in_time() -> None:
    lifetimes = analyze_module(parse_module(CALLS, verify=True))
    # @main and @last are top level, one after the other; @helper (2 ops) is
    # nested right after its call, @main's op 2: @main's ops 3, 4 move to 5, 6.
    assert lifetimes.time_offset == {"main": 0, "helper": 3, "last": 7}
    assert lifetimes.homes["helper"].number == 2
    assert lifetimes.segment(lifetimes.function("main")) == LiveInterval(0, 7)
    problem = lifetimes.problem()
    by_id = {b.id: b for b in problem.buffers}
    assert list(by_id) == ["helper.h", "main.m", "last.z"]
    assert (by_id["helper.h"].start, by_id["helper.h"].end) == (3, 4)
    # %m [0, 4) is live across the call: [0, 6) covers @helper's segment.
    assert (by_id["main.m"].start, by_id["main.m"].end) == (0, 6)
    assert (by_id["last.z"].start, by_id["last.z"].end) == (7, 8)
    assert by_id["helper.h"].conflicts_with(by_id["main.m"])
    assert not by_id["last.z"].conflicts_with(by_id["main.m"])
    assert by_id["last.z"].candidates == ("sram",)
    assert [p.name for p in problem.pools] == ["sram"]


def _storage_text(name: str) -> str:
    return (
        f"%{name} = memory.alloc_storage : !memory.storage<16>\n"
        f"%t{name} = memory.alloc_tensor %{name}[0] : !memory.storage<16> -> {TENSOR}\n"
    )


CALLEE = f"""
func.func private @use({TENSOR})
func.func @callee() {{
  {_storage_text("a")}
  memory.invoke @use ins(%ta : {TENSOR})
  memory.kill %a : !memory.storage<16>
  {_storage_text("b")}
  memory.invoke @use ins(%tb : {TENSOR})
  memory.kill %b : !memory.storage<16>
  func.return
}}
"""


def _module_buffers(source: str) -> dict[str, Buffer]:
    return {b.id: b for b in analyze_module(parse_module(source, verify=True)).problem().buffers}


def test_a_callee_keeps_its_own_intervals() -> None:
    """Only what is live across the call conflicts with the callee's storages."""
    buffers = _module_buffers(
        CALLEE
        + f"""
        func.func @main() {{
          {_storage_text("before")}
          memory.invoke @use ins(%tbefore : {TENSOR})
          memory.kill %before : !memory.storage<16>
          {_storage_text("across")}
          func.call @callee() : () -> ()
          memory.invoke @use ins(%tacross : {TENSOR})
          memory.kill %across : !memory.storage<16>
          {_storage_text("after")}
          func.return
        }}
        """
    )
    a, b = buffers["callee.a"], buffers["callee.b"]
    # @main's call is op 6: @callee's 9 ops take times 7..15.
    assert (a.start, a.end, b.start, b.end) == (7, 10, 11, 14)
    assert not a.conflicts_with(b)
    across = buffers["main.across"]
    assert (across.start, across.end) == (4, 17)
    assert across.conflicts_with(a) and across.conflicts_with(b)
    for name in ("main.before", "main.after"):
        assert not buffers[name].conflicts_with(a) and not buffers[name].conflicts_with(b)


def test_a_value_live_across_a_later_call_covers_the_callee_segment() -> None:
    """Two calls: the segment sits at the first; %s, live across the second, reaches back over it."""
    buffers = _module_buffers(
        CALLEE
        + f"""
        func.func @main() {{
          func.call @callee() : () -> ()
          {_storage_text("s")}
          func.call @callee() : () -> ()
          memory.invoke @use ins(%ts : {TENSOR})
          memory.kill %s : !memory.storage<16>
          func.return
        }}
        """
    )
    s = buffers["main.s"]
    # @callee's segment is [1, 10) (after op 0); %s [1, 5) maps to [10, 14).
    assert (s.start, s.end) == (1, 14)
    assert s.conflicts_with(buffers["callee.a"]) and s.conflicts_with(buffers["callee.b"])
    assert not buffers["callee.a"].conflicts_with(buffers["callee.b"])


MAKE = f"""
func.func private @use({TENSOR})
func.func @make() -> {TENSOR} {{
  {_storage_text("r")}
  memory.invoke @use ins(%tr : {TENSOR})
  func.return %tr : {TENSOR}
}}
"""


def test_a_returned_storage_lives_until_the_callers_last_use() -> None:
    lifetimes = analyze_module(
        parse_module(
            MAKE
            + f"""
            func.func @main() {{
              %v = func.call @make() : () -> {TENSOR}
              {_storage_text("s")}
              memory.invoke @use ins(%v : {TENSOR})
              memory.invoke @use ins(%ts : {TENSOR})
              {_storage_text("late")}
              func.return
            }}
            """,
            verify=True,
        )
    )
    assert lifetimes.function("make").storage_named("r").escape_kind is EscapeKind.RETURNED
    call = lifetimes.function("main").calls[0]
    assert (call.results, call.results_escape) == (LiveInterval(0, 4), EscapeKind.NONE)
    buffers = {b.id: b for b in lifetimes.problem().buffers}
    r = buffers["make.r"]
    # @make's segment is [1, 5), its %r [0, 4) there is [1, 5); in @main the
    # call's result %v is live [0, 4): times [0, 8) (op 3 moved up to 7).
    assert (r.start, r.end) == (0, 8)
    assert r.conflicts_with(buffers["main.s"])
    assert not r.conflicts_with(buffers["main.late"])


STASH = f"""
func.func @stash(%box: memref<{TENSOR}>) {{
  {_storage_text("k")}
  memref.store %tk, %box[] : memref<{TENSOR}>
  func.return
}}
func.func @mid(%box: memref<{TENSOR}>) {{
  func.call @stash(%box) : (memref<{TENSOR}>) -> ()
  func.return
}}
"""


def test_a_leaked_storage_lives_to_the_end_of_every_caller() -> None:
    """%k is stored: whoever reads %box later may reach it, up to @main's end."""
    lifetimes = analyze_module(
        parse_module(
            f"func.func private @use({TENSOR})\n"
            + STASH
            + f"""
            func.func @main(%box: memref<{TENSOR}>) {{
              func.call @mid(%box) : (memref<{TENSOR}>) -> ()
              {_storage_text("late")}
              func.return
            }}
            """,
            verify=True,
        )
    )
    assert lifetimes.function("stash").storage_named("k").escape_kind is EscapeKind.LEAKED
    buffers = {b.id: b for b in lifetimes.problem().buffers}
    assert buffers["stash.k"].conflicts_with(buffers["main.late"])
    assert buffers["stash.k"].end == lifetimes.segment(lifetimes.function("main")).end


@pytest.mark.parametrize(
    "main",
    [
        # The first result is still used when the second call makes %r again.
        f"""
        func.func @main() {{
          %v = func.call @make() : () -> {TENSOR}
          %w = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%v : {TENSOR})
          func.return
        }}
        """,
        # Leaked by the call in the first iteration, made again in the next
        # (the call has no result: the loop, not a result, makes it repeat).
        f"""
        func.func @main(%box: memref<{TENSOR}>) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c2 = arith.constant 2 : index
          scf.for %i = %c0 to %c2 step %c1 {{
            func.call @mid(%box) : (memref<{TENSOR}>) -> ()
          }}
          func.return
        }}
        """,
        # Carried to the next iteration of the loop that calls @make again.
        f"""
        func.func @main(%x: {TENSOR}) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c2 = arith.constant 2 : index
          %out = scf.for %i = %c0 to %c2 step %c1 iter_args(%acc = %x) -> ({TENSOR}) {{
            memory.invoke @use ins(%acc : {TENSOR})
            %v = func.call @make() : () -> {TENSOR}
            scf.yield %v : {TENSOR}
          }}
          func.return
        }}
        """,
    ],
)
def test_two_live_instances_of_one_storage_are_refused(main: str) -> None:
    with pytest.raises(PassFailedException) as failure:
        analyze_module(parse_module(MAKE + STASH + main, verify=True))
    message = str(failure.value)
    expected = (
        "storage %k of @stash (16 bytes) is still live in @main at its call of @mid"
        if "@mid" in main
        else "storage %r of @make (16 bytes) is still live in @main at its call of @make"
    )
    assert expected in message
    assert TWO_INSTANCES in message


def test_a_returned_storage_dead_before_the_next_call_is_fine() -> None:
    buffers = _module_buffers(
        MAKE
        + f"""
        func.func @main() {{
          %v = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%v : {TENSOR})
          %w = func.call @make() : () -> {TENSOR}
          memory.invoke @use ins(%w : {TENSOR})
          func.return
        }}
        """
    )
    assert list(buffers) == ["make.r"]


def test_function_problem_and_placements() -> None:
    module = parse_module(
        """
        memory.pool @sram size 1024 align 32
        func.func @f() {
          %a = memory.alloc_storage align 128 at @sram[256] : !memory.storage<100>
          %b = memory.alloc_storage on "npu" : !memory.storage<8>
          %n = arith.constant 4 : index
          %d = memory.alloc_storage(%n) : !memory.storage<?>
          func.return
        }
        """,
        verify=True,
    )
    lifetimes = analyze_function(function_named(module, "f"))
    assert [s.name for s in lifetimes.storages] == ["a", "b", "d"]
    problem = lifetimes.problem()
    a, b = problem.buffers
    assert (a.id, a.size, a.alignment, a.candidates, a.pinned_offset) == (
        "a",
        100,
        128,
        ("sram",),
        256,
    )
    assert (b.device, b.candidates, b.pinned_offset) == ("npu", (), None)
    assert problem.pools[0].alignment == 32
    assert lifetimes.placements().placements["a"].offset == 256
    assert lifetimes.storage_named("d").size is None


def test_unnamed_and_duplicate_names_are_made_unique() -> None:
    module = parse_module(
        """
        func.func @f(%c: i1) {
          %0 = memory.alloc_storage : !memory.storage<8>
          scf.if %c {
            %s = memory.alloc_storage : !memory.storage<8>
            scf.yield
          } else {
            %s = memory.alloc_storage : !memory.storage<8>
            scf.yield
          }
          %s0 = memory.alloc_storage : !memory.storage<8>
          func.return
        }
        """,
        verify=True,
    )
    names = [s.name for s in analyze_function(function_named(module, "f")).storages]
    assert len(set(names)) == len(names) == 4
    assert names[1] == "s" and names[3] == "s0"


def test_cfg_liveness_is_a_fixpoint_over_blocks() -> None:
    """A value live around a CFG loop covers every block of the loop."""
    module = parse_module(
        f"""
        func.func private @use({TENSOR})
        func.func @f(%c: i1) {{
          %s = memory.alloc_storage : !memory.storage<16>
          %t = memory.alloc_tensor %s[0] : !memory.storage<16> -> {TENSOR}
          cf.br ^bb1
        ^bb1:
          cf.cond_br %c, ^bb2, ^bb3
        ^bb2:
          memory.invoke @use ins(%t : {TENSOR})
          cf.br ^bb1
        ^bb3:
          %late = memory.alloc_storage : !memory.storage<16>
          func.return
        }}
        """,
        verify=True,
    )
    lifetimes = analyze_function(function_named(module, "f"))
    s = lifetimes.storage_named("s")
    late = lifetimes.storage_named("late")
    # ^bb2 (the use, ops 4..5) branches back to ^bb1 (op 3): %s is live out of
    # ^bb2, so it covers ^bb1..^bb2 and ends with ^bb2 at 6.
    assert s.interval == LiveInterval(0, 6)
    assert late.interval == LiveInterval(6, 7)
    assert not s.buffer().conflicts_with(late.buffer())


def test_recursion_with_storages_is_refused() -> None:
    module = parse_module(RECURSIVE, verify=True)
    with pytest.raises(PassFailedException, match="@r calls itself"):
        analyze_module(module)


# ---------------------------------------------------------------------------
# Storages carried to the next iteration of the loop allocating them
# ---------------------------------------------------------------------------

_CARRY_CASES = {
    # Allocated in the body, yielded into %acc, which the next trip reads.
    "for_inside": (
        """
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%acc, %t) : (memref<16xf32>, memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        "scf.for",
    ),
    # One instance, allocated before the loop and carried through it.
    "for_outside": (
        """
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %t) -> (memref<16xf32>) {
          "test.op"(%acc) : (memref<16xf32>) -> ()
          scf.yield %acc : memref<16xf32>
        }
        """,
        None,
    ),
    # Yielded, but the next trip never reads %acc: the previous instance is dead.
    "for_unused_argument": (
        """
        %r = scf.for %i = %c0 to %n step %c1 iter_args(%acc = %init) -> (memref<16xf32>) {
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%t) : (memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        None,
    ),
    # scf.while: allocated in `after`, yielded to `before`'s argument.
    "while_inside": (
        """
        %r = scf.while (%acc = %init) : (memref<16xf32>) -> memref<16xf32> {
          "test.op"(%acc) : (memref<16xf32>) -> ()
          scf.condition(%go) %acc : memref<16xf32>
        } do {
        ^bb0(%cur: memref<16xf32>):
          %s = memory.alloc_storage : !memory.storage<64>
          %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
          "test.op"(%cur, %t) : (memref<16xf32>, memref<16xf32>) -> ()
          scf.yield %t : memref<16xf32>
        }
        """,
        "scf.while",
    ),
    # cf back edge: %acc (the previous %t) is read after the new %s exists.
    "cf_inside": (
        """
        cf.br ^loop(%init : memref<16xf32>)
      ^loop(%acc: memref<16xf32>):
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        "test.op"(%acc, %t) : (memref<16xf32>, memref<16xf32>) -> ()
        cf.cond_br %go, ^loop(%t : memref<16xf32>), ^exit
      ^exit:
        """,
        "block",
    ),
    # cf back edge, but %acc is last read before the new %s is allocated.
    "cf_dead_before_alloc": (
        """
        cf.br ^loop(%init : memref<16xf32>)
      ^loop(%acc: memref<16xf32>):
        "test.op"(%acc) : (memref<16xf32>) -> ()
        %s = memory.alloc_storage : !memory.storage<64>
        %t = memory.alloc_tensor %s[0] : !memory.storage<64> -> memref<16xf32>
        "test.op"(%t) : (memref<16xf32>) -> ()
        cf.cond_br %go, ^loop(%t : memref<16xf32>), ^exit
      ^exit:
        """,
        None,
    ),
}


@pytest.mark.parametrize("case", sorted(_CARRY_CASES))
def test_carried_across_iterations(case: str) -> None:
    body, carrier = _CARRY_CASES[case]
    module = parse_module(
        f"""
        func.func @main(%n : index, %init : memref<16xf32>, %go : i1) {{
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          {body}
          func.return
        }}
        """,
        verify=True,
    )
    lifetimes = analyze_function(function_named(module))
    s = lifetimes.storage_named("s")
    assert s.carried_across_iterations == (carrier is not None)
    if carrier == "block":
        assert isinstance(s.carrying_loop, Block)
    elif carrier is not None:
        assert isinstance(s.carrying_loop, Operation) and s.carrying_loop.name == carrier
    if carrier is None:
        run_passes(module, "usmp")
        assert s.alloc.pinned is not None
    else:
        with pytest.raises(PassFailedException, match=r"storage %s of @main .* two instances"):
            run_passes(module, "usmp")
