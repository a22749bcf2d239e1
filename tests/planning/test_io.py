"""MiniMalloc CSV and memplan JSON: round trips and precise input errors."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings

from memplan.passes.planning.algorithms import solve
from memplan.passes.planning.io import (
    PlanningInputError,
    format_csv,
    parse_csv,
    problem_from_json,
    problem_to_json,
    read_csv,
    read_problem_json,
    read_solution_json,
    solution_from_json,
    solution_to_json,
    write_csv,
    write_problem_json,
    write_solution_json,
)
from memplan.passes.planning.model import Buffer, Problem
from memplan_testing import examples
from tests.planning.strategies import problems

TOY = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def test_parse_toy_problem() -> None:
    problem = parse_csv(TOY, capacity=12).problem
    assert [b.id for b in problem.buffers] == ["b1", "b2", "b3", "b4", "b5"]
    assert (problem.buffers[1].start, problem.buffers[1].end) == (3, 9)
    assert problem.pools[0].size == 12


def test_parsed_buffers_equal_constructed_ones() -> None:
    # parse_csv builds its checked buffers without Buffer's __init__: they
    # still compare, hash and print as Buffer(...) does, defaults included.
    text = "id,lower,upper,size,alignment,offset\na,0,3,16,4,8\nb,1,2,8,,\n"
    parsed = parse_csv(text).problem.buffers
    built = (Buffer("a", 16, 0, 3, 4, pinned_offset=8), Buffer("b", 8, 1, 2))
    assert parsed == built
    assert list(map(hash, parsed)) == list(map(hash, built))
    assert list(map(repr, parsed)) == list(map(repr, built))
    assert (parsed[1].device, parsed[1].candidates, parsed[1].branch) == ("cpu", (), ())


def test_aliases_inclusive_end_alignment_offset_and_extra_columns() -> None:
    text = "size,buffer_id,begin,end,alignment,offset,note\n8,x,0,2,4,,hi\n4,y,3,3,1,16,\n"
    table = parse_csv(text)
    x, y = table.problem.buffers
    assert (x.id, x.start, x.end, x.alignment, x.pinned_offset) == ("x", 0, 3, 4, None)
    assert (y.start, y.end, y.pinned_offset) == (3, 4, 16)
    solution = solve(table.problem, "greedy-by-size")
    out = format_csv(table.problem, solution, table).splitlines()
    assert out[0] == "size,buffer_id,begin,end,alignment,offset,note"
    assert out[1] == "8,x,0,2,4,0,hi"
    assert out[2] == "4,y,3,3,1,16,"


def test_gaps_and_hint_are_accepted_and_gaps_checked() -> None:
    ok = "id,lower,upper,size,gaps,hint\na,0,10,4,2-4 5-6@0:2,3\n"
    assert len(parse_csv(ok).problem.buffers) == 1
    with pytest.raises(PlanningInputError, match=r"<string>:2: .*malformed gap 'x-y'"):
        parse_csv("id,lower,upper,size,gaps\na,0,10,4,x-y\n")


def test_parsing_stops_at_first_empty_line() -> None:
    assert len(parse_csv("id,lower,upper,size\na,0,1,1\n\nnot,a,row\n").problem.buffers) == 1


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,lower,size\na,0,4\n", r"f.csv:1: missing column 'upper'"),
        ("id,lower,upper,size\na,0,4,-1\n", r"f.csv:2: buffer 'a': negative size -1"),
        ("id,lower,upper,size\na,4,4,1\n", r"f.csv:2: buffer 'a': lower 4 >= upper 4"),
        ("id,lower,upper,size\na,0,4,1.5\n", r"f.csv:2: column 'size': '1.5' is not an integer"),
        (
            "id,lower,upper,size\na,0,4,1\na,1,2,1\n",
            r"f.csv:3: duplicate id 'a' \(first on line 2\)",
        ),
        ("id,lower,upper,size\na,0,4\n", r"f.csv:2: expected 4 fields, found 3"),
        ("", r"f.csv:1: empty file"),
        ("id,buffer,lower,upper,size\n", r"f.csv:1: columns 'id' and 'buffer' both give 'id'"),
        ("id,lower,upper,size,alignment\na,0,4,1,0\n", r"alignment must be positive"),
    ],
)
def test_malformed_csv(text: str, message: str) -> None:
    with pytest.raises(PlanningInputError, match=message):
        parse_csv(text, source="f.csv")


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(PlanningInputError, match="cannot read"):
        read_csv(tmp_path / "absent.csv")


@settings(max_examples=examples(40), deadline=None)
@given(problems(max_buffers=10))
def test_json_round_trip(problem: Problem) -> None:
    assert problem_from_json(problem_to_json(problem)) == problem
    solution = solve(problem, "greedy-by-conflicts")
    again = solution_from_json(solution_to_json(solution))
    assert again.placements == solution.placements
    assert again.status == solution.status


def test_files_round_trip(tmp_path: Path) -> None:
    problem = parse_csv(TOY, capacity=12).problem
    solution = solve(problem, "exact")
    write_csv(tmp_path / "out.csv", problem, solution)
    reread = read_csv(tmp_path / "out.csv", 12)
    assert [(b.id, b.start, b.end, b.size) for b in reread.buffers] == [
        (b.id, b.start, b.end, b.size) for b in problem.buffers
    ]
    assert {b.id: b.pinned_offset for b in reread.buffers} == {
        k: p.offset for k, p in solution.placements.items()
    }
    write_problem_json(tmp_path / "p.json", problem)
    write_solution_json(tmp_path / "s.json", solution)
    assert read_problem_json(tmp_path / "p.json") == problem
    assert read_solution_json(tmp_path / "s.json").placements == solution.placements


def test_malformed_json(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{\n  nope")
    with pytest.raises(PlanningInputError, match=r"bad.json:2: invalid JSON"):
        read_problem_json(tmp_path / "bad.json")
    with pytest.raises(PlanningInputError, match="not a memplan.problem/1 object"):
        problem_from_json({"buffers": []})
    with pytest.raises(PlanningInputError, match=r"buffers\[0\]: 'size' must be an integer"):
        problem_from_json(
            {
                "schema": "memplan.problem/1",
                "buffers": [{"id": "a", "size": "1", "start": 0, "end": 1}],
            }
        )
