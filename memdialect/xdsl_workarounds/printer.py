"""``DistinctNamePrinter``: xDSL's printer, with every value of a scope under a name of its own."""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.ir import SSAValue
from xdsl.printer import Printer


@dataclass(eq=False, repr=False)
class DistinctNamePrinter(Printer):
    """xDSL's printer, giving every value of a scope a name of its own.

    Upstream (xDSL 0.74 ``Printer.print_ssa_value``): a name hint seen
    before is printed with the next ``_N`` suffix, without checking that
    another value's hint is not that name; and a hint loses one ``_N``
    suffix when it is set (``SSAValue.extract_valid_name``). So ``%w``,
    ``%w_1`` and ``%w_1_1`` (or ONNX tensors ``w`` and ``w_1:0``) print as
    ``%w``, ``%w_1``, ``%w_1``: a value defined twice, a text that does not
    parse (or, after a use, parses to another program). Here a name
    already printed in the scope takes the hint's next free suffix. Waits
    for: the same check in ``print_ssa_value``."""

    _printed_names: list[set[str]] = field(default_factory=lambda: [set[str]()], init=False)

    def print_ssa_value(self, value: SSAValue) -> str:
        hint = value.name_hint
        if hint and value not in self._ssa_values:
            taken = self._printed_names[-1]
            index = self.ssa_names.get(hint, 0)
            name = f"{hint}_{index}" if index else hint
            while name in taken:
                index += 1
                name = f"{hint}_{index}"
            self.ssa_names[hint] = index + 1
            self._ssa_values[value] = name
            taken.add(name)
        return super().print_ssa_value(value)

    def enter_scope(self) -> None:
        super().enter_scope()
        self._printed_names.append(set(self._printed_names[-1]))

    def exit_scope(self) -> None:
        super().exit_scope()
        self._printed_names.pop()
