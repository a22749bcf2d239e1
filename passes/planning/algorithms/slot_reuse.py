"""Whole-buffer slot reuse: TVM GraphPlanMemory's free-list rule (Relax
StaticPlanBlockMemory), on planning ``Buffer``s.

GraphPlanMemory walks a function in op order keeping a free list of storage
tokens per device: a token whose reference count drops to zero goes back on
the list, and a later request of ``n`` bytes takes a free token whose size
lies in ``[n / match_range, n * match_range]`` (the smallest one of at least
``n`` bytes, else the largest smaller one, grown to ``n``) or opens a new one.
Here the tokens are *slots* and a request is a buffer; the ``reuse`` pass
makes one storage per slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from memplan.passes.planning.model import Buffer


@dataclass
class _Slot:
    """One reusable block of bytes and the buffers that take it in turn."""

    size: int
    members: list[int] = field(default_factory=list)
    # Members that may still be live at the current request time.
    live: list[Buffer] = field(default_factory=list)

    def is_free_for(self, request: Buffer) -> bool:
        """No member still live at ``request.start`` conflicts with ``request``.

        Requests come in order of their start, so a member that ended by now
        ended for every later request too and is dropped for good. A member
        still live in another region of one ``scf.if`` does not conflict.
        """
        self.live = [member for member in self.live if member.end > request.start]
        return all(member.exclusive_with(request) for member in self.live)


def _match(free: Sequence[tuple[int, _Slot]], size: int, match_range: int) -> _Slot | None:
    """GraphPlanMemory's pick among free slots (ties: the slot opened first).

    Sizes in ``[size // match_range, size * match_range]`` qualify: the
    smallest of at least ``size`` bytes, else the largest smaller one.
    """
    larger = [(s.size, i, s) for i, s in free if size <= s.size <= size * match_range]
    if larger:
        return min(larger, key=lambda entry: (entry[0], entry[1]))[2]
    smaller = [(s.size, i, s) for i, s in free if size // match_range <= s.size < size]
    if smaller:
        return min(smaller, key=lambda entry: (-entry[0], entry[1]))[2]
    return None


def assign_slots(buffers: Sequence[Buffer], match_range: int = 16) -> list[list[int]]:
    """Group ``buffers`` into slots by GraphPlanMemory's free-list rule.

    Buffers are requested in order of their start (ties: list order). A slot
    is free for a request when none of its members conflicts with it (all
    ended, or live in another region of one ``scf.if``); free lists are per
    ``(device, candidates)``. Returns the slots as lists of buffer indices
    in request order, the slots in the order they were opened. A slot's size
    is its largest member. ``match_range=0`` gives every buffer its own slot.
    Buffers that never end (escaping values live to the end of the
    function) can take a slot but never give it back.
    """
    if match_range < 0:
        raise ValueError(f"match_range must be >= 0, got {match_range}")
    order = sorted(range(len(buffers)), key=lambda i: (buffers[i].start, i))
    slots: list[_Slot] = []
    by_key: dict[tuple[str, tuple[str, ...]], list[tuple[int, _Slot]]] = {}
    for index in order:
        request = buffers[index]
        key = (request.device, request.candidates)
        family = by_key.setdefault(key, [])
        chosen: _Slot | None = None
        if match_range > 0:
            free = [(i, slot) for i, slot in family if slot.is_free_for(request)]
            chosen = _match(free, request.size, match_range)
        if chosen is None:
            chosen = _Slot(request.size)
            family.append((len(slots), chosen))
            slots.append(chosen)
        chosen.size = max(chosen.size, request.size)
        chosen.members.append(index)
        chosen.live.append(request)
    return [slot.members for slot in slots]
