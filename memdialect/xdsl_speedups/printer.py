"""``FastPrinter``: ``DistinctNamePrinter`` spelling each shaped type once."""

from __future__ import annotations

from dataclasses import dataclass, field
from io import StringIO

from xdsl.dialects.builtin import MemRefType, TensorType
from xdsl.ir import Attribute

from memplan.dialect.xdsl_workarounds.printer import DistinctNamePrinter


@dataclass(eq=False, repr=False)
class FastPrinter(DistinctNamePrinter):
    """``DistinctNamePrinter`` with two speed paths: xDSL 0.74 prints a
    type's parameters again at every use, and a program names a few shapes
    many times, so each shaped type's text is kept; and the common
    ``print_string`` (no newline) skips ``print``'s own overhead."""

    _shaped_type_text: dict[Attribute, str] = field(
        default_factory=dict[Attribute, str], init=False
    )

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
