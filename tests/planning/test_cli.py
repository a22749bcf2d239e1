"""memplan-solve, run as a subprocess exactly like a user would."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOY = "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "memplan.tools.memplan_solve", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def toy(tmp_path: Path) -> Path:
    path = tmp_path / "input.12.csv"
    path.write_text(TOY)
    return path


def offsets_are_valid(csv_text: str, capacity: int) -> bool:
    lines = csv_text.strip().splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","))) for line in lines[1:]]
    for row in rows:
        if int(row["offset"]) + int(row["size"]) > capacity:
            return False
    for i, a in enumerate(rows):
        for b in rows[i + 1 :]:
            live = int(a["lower"]) < int(b["upper"]) and int(b["lower"]) < int(a["upper"])
            oa, ob = int(a["offset"]), int(b["offset"])
            if live and oa < ob + int(b["size"]) and ob < oa + int(a["size"]):
                return False
    return True


def test_minimalloc_toy_at_capacity_12(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    result = run("--input", str(toy), "--output", str(out), "--capacity", "12", "--validate")
    assert result.returncode == 0, result.stderr
    assert "peak 12" in result.stdout and "validation PASS" in result.stdout
    text = out.read_text()
    assert text.splitlines()[0] == "id,lower,upper,size,offset"
    assert offsets_are_valid(text, 12)


def test_shared_suite_toy_if_present(tmp_path: Path) -> None:
    shared = Path("/work/shared/benchmarks/minimalloc/input.12.csv")
    if not shared.is_file():
        shared = REPO.parent / "shared" / "benchmarks" / "minimalloc" / "input.12.csv"
    if not shared.is_file():
        pytest.skip("MiniMalloc suite not available")
    result = run("--input", str(shared), "--capacity", "12", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["peak"] == 12 and report["lower_bound"] == 12


def test_minimise_json(toy: Path) -> None:
    result = run("--input", str(toy), "--json", "--algorithm", "exact", "--validate")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["status"] == "optimal"
    assert report["peak"] == report["lower_bound"] == 12
    assert report["valid"] is True


def test_infeasible_capacity_exits_1_without_output(toy: Path, tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    result = run("--input", str(toy), "--capacity", "11", "--output", str(out))
    assert result.returncode == 1
    assert "status infeasible" in result.stdout
    assert not out.exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("id,lower,size\na,0,4\n", "missing column 'upper'"),
        ("id,lower,upper,size\na,0,4,-3\n", "negative size -3"),
        ("id,lower,upper,size\na,5,5,1\n", "lower 5 >= upper 5"),
        ("id,lower,upper,size\na,0,x,1\n", "column 'upper': 'x' is not an integer"),
    ],
)
def test_malformed_csv(tmp_path: Path, text: str, message: str) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(text)
    out = tmp_path / "out.csv"
    result = run("--input", str(bad), "--output", str(out))
    assert result.returncode == 1
    assert result.stderr.startswith(f"memplan-solve: error: {bad}:")
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--input", "/nonexistent/x.csv"], "cannot read"),
        (["--algorithm", "magic"], "unknown algorithm 'magic'"),
        (["--timeout", "0"], "--timeout must be positive"),
        (["--capacity", "many"], "invalid int value"),
    ],
)
def test_usage_errors(toy: Path, args: list[str], message: str) -> None:
    if "--input" not in args:
        args = ["--input", str(toy), *args]
    result = run(*args)
    assert result.returncode == 1
    assert result.stderr.startswith("memplan-solve: error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_positional_input_and_short_output_like_the_other_tools(toy: Path, tmp_path: Path) -> None:
    """memplan-solve takes its input as an argument and -o, as every memplan
    tool does; --input stays as the older spelling and gives the same plan."""
    positional, option = tmp_path / "a.csv", tmp_path / "b.csv"
    first = run(str(toy), "-o", str(positional), "--capacity", "12")
    second = run("--input", str(toy), "--output", str(option), "--capacity", "12")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert positional.read_text() == option.read_text()
    assert "offset" in positional.read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "the following arguments are required: input"),
        (["a.csv", "--input", "b.csv"], "give the input once"),
    ],
)
def test_input_given_zero_or_two_times(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode == 1
    assert result.stderr.startswith(f"memplan-solve: error: {message}")


def test_version_needs_no_input() -> None:
    result = run("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("memplan-solve ")
    assert "(xdsl " in result.stdout
