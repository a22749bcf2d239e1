"""memplan's printer: xDSL's, with every value of a scope under a name of its own.

``DistinctNamePrinter`` is what ``memplan-opt`` and the importers print
with; ``printed_names`` gives the names it prints, so that reports, the C
header and diagnostics name storages and tensors as the IR does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from io import StringIO
from typing import Any

from xdsl.dialects.builtin import MemRefType, ModuleOp, TensorType
from xdsl.ir import Attribute, SSAValue
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
    # Upstream prints a type's parameters again at every use; a program
    # names a few shapes many times.
    _shaped_type_text: dict[Attribute, str] = field(
        default_factory=dict[Attribute, str], init=False
    )

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

    def print_attribute(self, attribute: Attribute) -> None:
        # Each shaped type is spelled once (see ``_shaped_type_text``).
        if isinstance(attribute, TensorType | MemRefType):
            text = self._shaped_type_text.get(attribute)
            if text is None:
                stream, column = self.stream, self._current_column
                self.stream = StringIO()
                super().print_attribute(attribute)
                text = self._shaped_type_text[attribute] = self.stream.getvalue()
                self.stream, self._current_column = stream, column
            self.print_string(text)
            return
        super().print_attribute(attribute)

    def print_string(self, text: str, *, indent: int | None = None) -> None:
        # The common case (no newline) without ``print``'s own overhead.
        stream = self.stream
        if stream is not None and "\n" not in text:
            self._current_column += len(text)
            stream.write(text)
            return
        super().print_string(text, indent=indent)

    def enter_scope(self) -> None:
        super().enter_scope()
        self._printed_names.append(set(self._printed_names[-1]))

    def exit_scope(self) -> None:
        super().exit_scope()
        self._printed_names.pop()


def module_text(module: ModuleOp) -> str:
    """``module`` printed as xDSL/MLIR text, with a final newline, each
    value under a name of its own (``DistinctNamePrinter``): what the
    importers write."""
    stream = StringIO()
    DistinctNamePrinter(stream=stream).print_op(module)
    stream.write("\n")
    return stream.getvalue()


class _Discard(StringIO):
    """A stream that keeps nothing (``printed_names`` only wants the names)."""

    def write(self, text: Any) -> int:
        return len(text)


def printed_names(module: ModuleOp) -> dict[SSAValue, str]:
    """The name (without ``%``) each value of ``module`` is printed under
    by ``DistinctNamePrinter``: its hint, with a ``_N`` suffix where
    another value of its scope took the hint first, or a number."""
    printer = DistinctNamePrinter(stream=_Discard())
    printer.print_op(module)
    return dict(printer._ssa_values)  # pyright: ignore[reportPrivateUsage]
