"""The ``xdsl.universe`` entry point: plain ``xdsl-opt`` learns the ``memory``
dialect and every memplan pass once memplan is installed."""

from xdsl.universe import Universe

from memplan.passes import get_all_passes


def _get_memory_dialect():
    from memplan.dialect import Memory

    return Memory


MEMPLAN_UNIVERSE = Universe(
    all_dialects={"memory": _get_memory_dialect},
    all_passes=get_all_passes(),
)
