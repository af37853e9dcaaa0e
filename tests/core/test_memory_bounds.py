"""What the core remembers between calls stays as large as the work waiting, not as the work
ever seen: a 30-minute soak showed the worker growing with two memories that were only ever
cleared whole at 10,000 entries (docs/reliability.md)."""

from __future__ import annotations

from extender.core.gangs.no_room import NoRoom
from extender.core.preemption.tried import Tried


def test_the_no_room_memory_keeps_only_gangs_still_waiting() -> None:
    memory = NoRoom()
    for i in range(300):
        memory.remember(f"gangplank:default/g{i}", ("state",), "no room")
    memory.keep_only({"gangplank:default/g7"})
    assert len(memory) == 1
    assert memory.reason("gangplank:default/g7", ("state",)) == "no room"
    assert memory.reason("gangplank:default/g8", ("state",)) is None


def test_fruitless_searches_for_victims_are_forgotten_once_lapsed() -> None:
    tried = Tried()
    for i in range(10_000):  # one a second: each remembered for 30 s
        tried.remember(f"pod:default/p{i}", ("state",), float(i))
    assert len(tried) <= 512, "only the last 30 s, give or take a doubling"
    assert "pod:default/p9999" in tried
