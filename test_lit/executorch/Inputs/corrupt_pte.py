"""Writes the ExecuTorch program IN to OUT with one tensor moved: value
VALUE of the `forward` method placed at the offset of value ONTO (its
AllocationDetails rewritten by ExecuTorch's own serializer, loaded as
memplan loads it, without ExecuTorch's export pipeline).

Usage: corrupt_pte.py IN OUT VALUE ONTO"""

import sys

from memplan.tools.frontends.pte.program import executorch_serializer, load_pte

source, target, value, onto = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
with open(source, "rb") as file:
    pte = load_pte(file.read(), source)
[plan] = [plan for plan in pte.program.execution_plan if plan.name == "forward"]
moved, there = (plan.values[i].val.allocation_info for i in (value, onto))
moved.memory_id = there.memory_id
moved.memory_offset_low, moved.memory_offset_high = (
    there.memory_offset_low,
    there.memory_offset_high,
)
with open(target, "wb") as file:
    file.write(bytes(executorch_serializer().serialize_pte_binary(pte)))
