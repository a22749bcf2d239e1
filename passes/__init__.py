"""memplan's passes, registered by name.

Each pass lives in its own module and is imported lazily, as in
``xdsl.transforms.get_all_passes``. Adding a pass is one line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

# Importing this package must not load xDSL: `memplan.passes.planning` is
# xDSL-free and is what `memplan-solve` and the Python planning API import.
if TYPE_CHECKING:
    from xdsl.passes import ModulePass


def _manifest_alloc() -> type[ModulePass]:
    from memplan.passes.manifest_alloc import ManifestAllocPass

    return ManifestAllocPass


def _import_memref() -> type[ModulePass]:
    from memplan.passes.import_memref import ImportMemrefPass

    return ImportMemrefPass


def _lower_to_memref() -> type[ModulePass]:
    from memplan.passes.lower_to_memref import LowerToMemrefPass

    return LowerToMemrefPass


def _insert_kills() -> type[ModulePass]:
    from memplan.passes.insert_kills import InsertKillsPass

    return InsertKillsPass


def _verify_plan() -> type[ModulePass]:
    from memplan.passes.verify_plan import VerifyPlanPass

    return VerifyPlanPass


def _plan_report() -> type[ModulePass]:
    from memplan.passes.plan_report import PlanReportPass

    return PlanReportPass


def _coalesce() -> type[ModulePass]:
    from memplan.passes.coalesce import CoalescePass

    return CoalescePass


def _reuse() -> type[ModulePass]:
    from memplan.passes.reuse import ReusePass

    return ReusePass


def _usmp() -> type[ModulePass]:
    from memplan.passes.usmp import UsmpPass

    return UsmpPass


def _schedule() -> type[ModulePass]:
    from memplan.passes.schedule import SchedulePass

    return SchedulePass


def _plan() -> type[ModulePass]:
    from memplan.passes.plan import PlanPass

    return PlanPass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    """Return the memplan passes by name, each behind a lazy importer."""

    return {
        "manifest-alloc": _manifest_alloc,
        "import-memref": _import_memref,
        "lower-to-memref": _lower_to_memref,
        "insert-kills": _insert_kills,
        "usmp": _usmp,
        "coalesce": _coalesce,
        "reuse": _reuse,
        "verify-plan": _verify_plan,
        "plan-report": _plan_report,
        "schedule": _schedule,
        "plan": _plan,
    }
