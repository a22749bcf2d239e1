"""``plan-report{format=json}``: docs/design.md's report schema.

``{"functions": [{"name", "ops", "pools": [...], "buffers": [...],
"tensors": [...]}], "pools": [...]}``, each record (a dict of scalars) on
one line for readable diffs.

A pool of a function with an offset program (``usmp{parametric=true}``)
has ``"parametric": {"size", "at_lower", "at_upper", "dims"}`` (its bytes
as an expression of the dims, their value with every dim at the lower and
at the upper end of its range, and the dims it depends on with their
ranges); its storages have ``"slot"``, ``"above"`` and ``"offset_expr"``,
and a storage with a ``memory.reserve`` has ``"reserve"``. Without an
offset program none of these keys is written.
"""

from __future__ import annotations

import json
from typing import Any

from memplan.passes.report_formats.records import (
    BufferRecord,
    FunctionReport,
    PlanReport,
    PoolRecord,
    TensorRecord,
)


def _function_pool_json(function: FunctionReport, record: PoolRecord) -> dict[str, Any]:
    """A pool of ``function``, with its offset program's values if it has one."""
    entry = _pool_json(record)
    program = next((p for p in function.parametric if p.name == record.name), None)
    if program is not None:
        ranges = {d.name: [d.lower, d.upper] for d in function.dims}
        entry["parametric"] = {
            "size": str(program.size_expr),
            "at_lower": program.at_lower,
            "at_upper": program.at_upper,
            "dims": {name: ranges[name] for name in program.dims},
        }
    return entry


def _pool_json(record: PoolRecord) -> dict[str, Any]:
    return {
        "name": record.name,
        "size": record.size,
        "used": record.used,
        "lower_bound": record.lower_bound,
        "no_planning": record.no_planning,
        "base_alignment": record.base_alignment,
        "buffer_count": record.buffer_count,
    }


def _tensor_json(record: TensorRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": record.name,
        "storage": record.storage,
        "offset": record.offset,
        "size": record.size,
        "start": record.start,
        "end": record.end,
    }
    if record.inplace_of is not None:  # only in-place tensors have the key
        entry["inplace_of"] = record.inplace_of
    return entry


def _report_json(report: PlanReport) -> dict[str, Any]:
    return {
        "functions": [
            {
                "name": function.name,
                "ops": function.ops,
                "pools": [_function_pool_json(function, p) for p in function.pools],
                "buffers": [_buffer_json(b) for b in function.buffers],
                "tensors": [_tensor_json(t) for t in function.tensors],
            }
            for function in report.functions
        ],
        "pools": [_pool_json(p) for p in report.pools],
    }


def _buffer_json(b: BufferRecord) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": b.name,
        "size": b.size,
        "alignment": b.alignment,
        "start": b.start,
        "end": b.end,
        "pool": b.pool,
        "offset": b.offset,
        "device": b.device,
        "escapes": b.escapes,
        "read_only": b.read_only,
        "branch": [list(choice) for choice in b.branch],
    }
    if b.size_is_bound:  # only bounded dynamic storages have the key
        entry["size_is_bound"] = True
    if b.slot is not None:  # only storages of an offset program have these
        entry["slot"] = b.slot
        entry["above"] = list(b.above)
        entry["offset_expr"] = str(b.offset_expr)
    if b.reserve is not None:
        entry["reserve"] = str(b.reserve)
    return entry


def _is_record(value: Any) -> bool:
    """Scalars, lists of those, and dicts of those (dicts nested) fit on one line."""
    if isinstance(value, dict):
        return all(_is_record(v) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(x, dict) and _is_record(x) for x in value)
    return True


def _dump(value: Any, indent: int = 0) -> str:
    """JSON with each record (a dict of scalars) on one line, for readable diffs."""
    if _is_record(value):
        return json.dumps(value)
    pad = "  " * (indent + 1)
    close = "  " * indent
    if isinstance(value, dict):
        items = [
            f"{pad}{json.dumps(key)}: {_dump(item, indent + 1)}" for key, item in value.items()
        ]
        return "{\n" + ",\n".join(items) + "\n" + close + "}"
    items = [pad + _dump(item, indent + 1) for item in value]
    return "[\n" + ",\n".join(items) + "\n" + close + "]"


def format_json(report: PlanReport) -> str:
    """docs/design.md's report schema (plus ``ops``, ``tensors`` and module ``pools``)."""
    return _dump(_report_json(report)) + "\n"
