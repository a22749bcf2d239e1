"""Reading and writing planning problems: MiniMalloc CSV and memplan JSON.

CSV (MiniMalloc's format, ``google/minimalloc`` README)
    A header row names the columns; order does not matter. Fields are split on
    plain ``,`` (no quoting) and parsing stops at the first empty line.
    Required: ``id`` (any string), ``lower``, ``upper``, ``size`` (integers);
    the lifetime is half-open ``[lower, upper)``. Aliases: ``buffer`` /
    ``buffer_id`` -> ``id``, ``begin`` / ``start`` -> ``lower``, ``end`` ->
    ``upper`` where ``end`` is *inclusive* (1 is added). Optional:
    ``alignment`` (default 1) and ``offset`` (pins the buffer there).
    ``gaps`` is checked for syntax (``a-b`` or ``a-b@x:y`` tokens) and then
    ignored: the buffer is treated as live through its gaps, which can only
    cost memory, never produce an invalid plan. ``hint`` is ignored, as in
    MiniMalloc. Any other column is kept and written back unchanged.
    The capacity is not in the file; callers pass it (one pool, ``workspace``).

    Output is the input header and rows, verbatim, plus an ``offset`` column
    (filled in, or replaced if the input had one).

JSON (``memplan.problem/1`` and ``memplan.solution/1``)::

    {"schema": "memplan.problem/1",
     "pools": [{"name": str, "size": int|null, "alignment": int,
                "targets": [str]|null, "access": "rw"|"ro"}],
     "buffers": [{"id": str, "size": int, "start": int, "end": int,
                  "alignment": int, "device": str, "candidates": [str],
                  "read_only": bool, "branch": [[choice, region]],
                  "pinned_offset": int|null}]}
    {"schema": "memplan.solution/1", "status": str,
     "placements": [{"id": str, "pool": str, "offset": int}]}

Optional buffer and pool keys take the defaults of the model when absent.
Malformed input raises ``PlanningInputError`` naming the file and line.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplan.passes.planning.model import Buffer, Placement, Pool, Problem, Solution

PROBLEM_SCHEMA = "memplan.problem/1"
SOLUTION_SCHEMA = "memplan.solution/1"
CSV_POOL = "workspace"

_ALIASES = {
    "id": "id",
    "buffer": "id",
    "buffer_id": "id",
    "lower": "lower",
    "begin": "lower",
    "start": "lower",
    "upper": "upper",
    "end": "upper",
    "size": "size",
    "alignment": "alignment",
    "offset": "offset",
    "gaps": "gaps",
    "hint": "hint",
}
_REQUIRED = ("id", "lower", "upper", "size")
_GAP = re.compile(r"^-?\d+--?\d+(@-?\d+:-?\d+)?$")


class PlanningInputError(ValueError):
    """A problem or solution file that cannot be read; the message says where and why."""


@dataclass
class CsvTable:
    """A parsed CSV: the problem plus the raw header and rows, to write back."""

    problem: Problem
    header: list[str]
    rows: list[list[str]]
    source: str


def _int_field(value: str, column: str, where: str) -> int:
    text = value.strip()
    try:
        return int(text, 10)
    except ValueError:
        raise PlanningInputError(
            f"{where}: column '{column}': {text!r} is not an integer"
        ) from None


def _optional_fields(
    fields: list[str],
    alignment_column: int | None,
    offset_column: int | None,
    gaps_column: int | None,
    where: str,
    buffer_id: str,
) -> tuple[int, int | None]:
    """A row's ``alignment`` (default 1) and pinned ``offset`` (or None);
    its ``gaps`` checked for syntax only."""
    alignment = 1
    if alignment_column is not None and fields[alignment_column].strip():
        alignment = _int_field(fields[alignment_column], "alignment", where)
        if alignment <= 0:
            raise PlanningInputError(
                f"{where}: buffer '{buffer_id}': alignment must be positive, got {alignment}"
            )
    pinned: int | None = None
    if offset_column is not None and fields[offset_column].strip():
        pinned = _int_field(fields[offset_column], "offset", where)
        if pinned < 0:
            raise PlanningInputError(f"{where}: buffer '{buffer_id}': negative offset {pinned}")
    if gaps_column is not None:
        for token in fields[gaps_column].split():
            if not _GAP.match(token):
                raise PlanningInputError(
                    f"{where}: buffer '{buffer_id}': malformed gap {token!r} "
                    f"(expected 'a-b' or 'a-b@x:y')"
                )
    return alignment, pinned


def _checked_buffer(
    buffer_id: str, size: int, start: int, end: int, alignment: int, pinned: int | None
) -> Buffer:
    """``Buffer(buffer_id, size, start, end, alignment, pinned_offset=pinned)``
    for fields ``parse_csv`` has checked already, without ``Buffer``'s own
    checks and frozen ``__init__`` (a third of the time: 10,000 rows are
    read in about 30 ms less); every other field takes its declared default
    (``_BUFFER_DEFAULTS``)."""
    buffer = object.__new__(Buffer)
    state = vars(buffer)
    state.update(_BUFFER_DEFAULTS)
    state.update(
        id=buffer_id, size=size, start=start, end=end, alignment=alignment, pinned_offset=pinned
    )
    return buffer


def _buffer_defaults() -> dict[str, object]:
    """Every ``Buffer`` field's default; a field without one (or with a
    factory) that ``_checked_buffer`` does not set fails here, at import."""
    given = {"id", "size", "start", "end", "alignment", "pinned_offset"}
    defaults: dict[str, object] = {}
    for spec in dataclasses.fields(Buffer):
        if spec.name in given:
            continue
        if spec.default is dataclasses.MISSING:
            raise TypeError(
                f"_checked_buffer does not set Buffer.{spec.name}, which has no default"
            )
        defaults[spec.name] = spec.default
    return defaults


_BUFFER_DEFAULTS = _buffer_defaults()


def parse_csv(text: str, source: str = "<string>", capacity: int | None = None) -> CsvTable:
    """Parse MiniMalloc CSV ``text`` into one pool of ``capacity`` bytes."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise PlanningInputError(f"{source}:1: empty file, expected a header row")
    header = [name.strip() for name in lines[0].split(",")]
    column_of: dict[str, int] = {}
    for index, name in enumerate(header):
        canonical = _ALIASES.get(name.lower())
        if canonical is None:
            continue
        if canonical in column_of:
            raise PlanningInputError(
                f"{source}:1: columns '{header[column_of[canonical]]}' and '{name}' "
                f"both give '{canonical}'"
            )
        column_of[canonical] = index
    missing = [name for name in _REQUIRED if name not in column_of]
    if missing:
        raise PlanningInputError(
            f"{source}:1: missing column{'s' if len(missing) > 1 else ''} "
            f"{', '.join(repr(m) for m in missing)} (header: {','.join(header)})"
        )
    inclusive_end = header[column_of["upper"]].lower() == "end"

    rows: list[list[str]] = []
    buffers: list[Buffer] = []
    seen: dict[str, int] = {}
    width = len(header)
    id_column = column_of["id"]
    lower_column = column_of["lower"]
    upper_column = column_of["upper"]
    size_column = column_of["size"]
    upper_name = header[upper_column]
    alignment_column = column_of.get("alignment")
    offset_column = column_of.get("offset")
    gaps_column = column_of.get("gaps")
    # Per line only what the line needs: its location is formatted on an error.
    for line_number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            break  # MiniMalloc stops at the first empty line.
        fields = line.split(",")
        if len(fields) != width:
            raise PlanningInputError(
                f"{source}:{line_number}: expected {width} fields, found {len(fields)}"
            )
        buffer_id = fields[id_column].strip()
        if not buffer_id:
            raise PlanningInputError(f"{source}:{line_number}: empty buffer id")
        if buffer_id in seen:
            raise PlanningInputError(
                f"{source}:{line_number}: duplicate id '{buffer_id}' "
                f"(first on line {seen[buffer_id]})"
            )
        seen[buffer_id] = line_number
        try:
            lower = int(fields[lower_column], 10)
            upper = int(fields[upper_column], 10)
            size = int(fields[size_column], 10)
        except ValueError:
            # Again, field by field, for the message naming the bad one.
            where = f"{source}:{line_number}"
            lower = _int_field(fields[lower_column], "lower", where)
            upper = _int_field(fields[upper_column], upper_name, where)
            size = _int_field(fields[size_column], "size", where)
        if inclusive_end:
            upper += 1
        if size < 0:
            raise PlanningInputError(
                f"{source}:{line_number}: buffer '{buffer_id}': negative size {size}"
            )
        if lower >= upper:
            raise PlanningInputError(
                f"{source}:{line_number}: buffer '{buffer_id}': lower {lower} >= upper {upper} "
                f"(lifetimes are half-open [lower, upper))"
            )
        alignment = 1
        pinned: int | None = None
        if alignment_column is not None or offset_column is not None or gaps_column is not None:
            alignment, pinned = _optional_fields(
                fields,
                alignment_column,
                offset_column,
                gaps_column,
                f"{source}:{line_number}",
                buffer_id,
            )
        rows.append(fields)
        buffers.append(_checked_buffer(buffer_id, size, lower, upper, alignment, pinned))
    problem = Problem(tuple(buffers), (Pool(CSV_POOL, size=capacity),))
    return CsvTable(problem, header, rows, source)


def read_csv_table(path: str | Path, capacity: int | None = None) -> CsvTable:
    """Read a MiniMalloc CSV file, keeping its raw rows for ``write_csv``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as error:
        raise PlanningInputError(f"{path}: cannot read: {error.strerror}") from None
    except UnicodeDecodeError:
        raise PlanningInputError(f"{path}: not a text file") from None
    return parse_csv(text, str(path), capacity)


def read_csv(path: str | Path, capacity: int | None = None) -> Problem:
    """Read a MiniMalloc CSV file as a one-pool ``Problem`` (pool size ``capacity``)."""
    return read_csv_table(path, capacity).problem


def format_csv(problem: Problem, solution: Solution, table: CsvTable | None = None) -> str:
    """The CSV text of ``solution``: the input columns plus ``offset``.

    Without ``table`` the columns are ``id,lower,upper,size`` plus
    ``alignment`` when some buffer has one, then ``offset``. Unplaced buffers
    get an empty offset.
    """

    def offset_of(buffer_id: str) -> str:
        placement = solution.placements.get(buffer_id)
        return "" if placement is None else str(placement.offset)

    if table is not None:
        header = list(table.header)
        offset_column = next((i for i, name in enumerate(header) if name.lower() == "offset"), None)
        if offset_column is None:
            header.append("offset")
        id_column = next(i for i, n in enumerate(header) if _ALIASES.get(n.lower()) == "id")
        lines = [",".join(header)]
        for row in table.rows:
            out = list(row)
            offset = offset_of(row[id_column].strip())
            if offset_column is None:
                out.append(offset)
            else:
                out[offset_column] = offset
            lines.append(",".join(out))
        return "\n".join(lines) + "\n"
    with_alignment = any(b.alignment != 1 for b in problem.buffers)
    header = ["id", "lower", "upper", "size"] + (["alignment"] if with_alignment else [])
    lines = [",".join(header + ["offset"])]
    for b in problem.buffers:
        fields = [b.id, str(b.start), str(b.end), str(b.size)]
        if with_alignment:
            fields.append(str(b.alignment))
        lines.append(",".join(fields + [offset_of(b.id)]))
    return "\n".join(lines) + "\n"


def write_csv(
    path: str | Path,
    problem: Problem,
    solution: Solution,
    table: CsvTable | None = None,
) -> None:
    """Write ``format_csv(problem, solution, table)`` to ``path``."""
    Path(path).write_text(format_csv(problem, solution, table))


# --- JSON --------------------------------------------------------------------


def problem_to_json(problem: Problem) -> dict[str, Any]:
    """The ``memplan.problem/1`` JSON object for ``problem``."""
    return {
        "schema": PROBLEM_SCHEMA,
        "pools": [
            {
                "name": p.name,
                "size": p.size,
                "alignment": p.alignment,
                "targets": None if p.targets is None else list(p.targets),
                "access": p.access,
            }
            for p in problem.pools
        ],
        "buffers": [
            {
                "id": b.id,
                "size": b.size,
                "start": b.start,
                "end": b.end,
                "alignment": b.alignment,
                "device": b.device,
                "candidates": list(b.candidates),
                "read_only": b.read_only,
                "branch": [list(step) for step in b.branch],
                "pinned_offset": b.pinned_offset,
            }
            for b in problem.buffers
        ],
    }


def _require(obj: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in obj:
        raise PlanningInputError(f"{where}: missing key '{key}'")
    value = obj[key]
    if kind is int and (isinstance(value, bool) or not isinstance(value, int)):
        raise PlanningInputError(f"{where}: '{key}' must be an integer, got {value!r}")
    if kind is not int and not isinstance(value, kind):
        raise PlanningInputError(f"{where}: '{key}' must be {kind.__name__}, got {value!r}")
    return value


def problem_from_json(data: Any, source: str = "<json>") -> Problem:
    """Build a ``Problem`` from a ``memplan.problem/1`` object."""
    if not isinstance(data, dict) or data.get("schema") != PROBLEM_SCHEMA:
        raise PlanningInputError(f"{source}: not a {PROBLEM_SCHEMA} object")
    try:
        pools = []
        for index, raw in enumerate(data.get("pools", [])):
            where = f"{source}: pools[{index}]"
            targets = raw.get("targets")
            pools.append(
                Pool(
                    _require(raw, "name", str, where),
                    size=raw.get("size"),
                    alignment=raw.get("alignment", 1),
                    targets=None if targets is None else tuple(targets),
                    access=raw.get("access", "rw"),
                )
            )
        buffers = []
        for index, raw in enumerate(_require(data, "buffers", list, source)):
            where = f"{source}: buffers[{index}]"
            buffers.append(
                Buffer(
                    _require(raw, "id", str, where),
                    _require(raw, "size", int, where),
                    _require(raw, "start", int, where),
                    _require(raw, "end", int, where),
                    alignment=raw.get("alignment", 1),
                    device=raw.get("device", "cpu"),
                    candidates=tuple(raw.get("candidates", ())),
                    read_only=bool(raw.get("read_only", False)),
                    branch=tuple((int(c), int(r)) for c, r in raw.get("branch", ())),
                    pinned_offset=raw.get("pinned_offset"),
                )
            )
        return Problem(tuple(buffers), tuple(pools))
    except PlanningInputError:
        raise
    except (ValueError, TypeError, AttributeError) as error:
        raise PlanningInputError(f"{source}: {error}") from None


def solution_to_json(solution: Solution) -> dict[str, Any]:
    """The ``memplan.solution/1`` JSON object for ``solution``."""
    return {
        "schema": SOLUTION_SCHEMA,
        "status": solution.status,
        "placements": [
            {"id": buffer_id, "pool": p.pool, "offset": p.offset}
            for buffer_id, p in solution.placements.items()
        ],
    }


def solution_from_json(data: Any, source: str = "<json>") -> Solution:
    """Build a ``Solution`` from a ``memplan.solution/1`` object."""
    if not isinstance(data, dict) or data.get("schema") != SOLUTION_SCHEMA:
        raise PlanningInputError(f"{source}: not a {SOLUTION_SCHEMA} object")
    status = data.get("status", "feasible")
    if status == "timeout":
        status = "unknown"  # the name older solution files use
    if status not in ("optimal", "feasible", "unknown", "infeasible"):
        raise PlanningInputError(f"{source}: unknown status {status!r}")
    placements: dict[str, Placement] = {}
    for index, raw in enumerate(_require(data, "placements", list, source)):
        where = f"{source}: placements[{index}]"
        if not isinstance(raw, dict):
            raise PlanningInputError(f"{where}: expected an object")
        buffer_id = _require(raw, "id", str, where)
        if buffer_id in placements:
            raise PlanningInputError(f"{where}: duplicate id '{buffer_id}'")
        placements[buffer_id] = Placement(
            _require(raw, "pool", str, where), _require(raw, "offset", int, where)
        )
    return Solution(placements, status)


def _load_json(path: str | Path) -> Any:
    import json  # on use: memplan-solve's CSV path does not need it

    try:
        return json.loads(Path(path).read_text())
    except OSError as error:
        raise PlanningInputError(f"{path}: cannot read: {error.strerror}") from None
    except json.JSONDecodeError as error:
        raise PlanningInputError(f"{path}:{error.lineno}: invalid JSON: {error.msg}") from None


def read_problem_json(path: str | Path) -> Problem:
    """Read a ``memplan.problem/1`` file."""
    return problem_from_json(_load_json(path), str(path))


def write_problem_json(path: str | Path, problem: Problem) -> None:
    """Write ``problem`` as a ``memplan.problem/1`` file."""
    import json

    Path(path).write_text(json.dumps(problem_to_json(problem), indent=1) + "\n")


def read_solution_json(path: str | Path) -> Solution:
    """Read a ``memplan.solution/1`` file."""
    return solution_from_json(_load_json(path), str(path))


def write_solution_json(path: str | Path, solution: Solution) -> None:
    """Write ``solution`` as a ``memplan.solution/1`` file."""
    import json

    Path(path).write_text(json.dumps(solution_to_json(solution), indent=1) + "\n")
