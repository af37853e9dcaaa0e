"""The live view of `make demo`: a long reason is cut between words, with "…"."""

from __future__ import annotations

import pytest

from extender.sim.live import LiveView

LONG = (
    "queue research: gang research/sweep-12 needs 16 nvidia.com/gpu beyond its guarantee "
    "(8 of 8 in use); 16 are idle but 16 of them are guaranteed to queues with waiting jobs "
    "(production 8, vision 8): it waits until they are free"
)


def test_a_long_waiting_reason_is_cut_between_words_with_an_ellipsis(
    capsys: pytest.CaptureFixture[str],
) -> None:
    LiveView(lambda: 1.5, {}).waiting({"research/sweep-12": LONG})
    line = capsys.readouterr().out.rstrip("\n")
    shown = line.split("research/sweep-12: ", 1)[1]
    assert shown.endswith(" …") and LONG.startswith(shown[:-2]), line
    assert LONG[len(shown) - 2] == " ", "cut between words"
