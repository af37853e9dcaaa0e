"""Long reasons are cut where a person reads them: at a word boundary, with "…" saying so."""

from __future__ import annotations

import pytest

from extender.core.model.text import shorten

REASON = (
    "gang team-a/train: needs 4 pods of 8 nvidia.com/gpu in one rack; the largest free rack "
    "has 2 nodes with 8 GPUs free"
)
CASES = [
    (REASON, 200, REASON, "a reason that fits is left whole"),
    (REASON, 40, "gang team-a/train: needs 4 pods of 8 …", "a long one is cut between words"),
    ("x" * 50, 10, "xxxxxxxxx…", "one word longer than the room is cut within it"),
    ("a  reason\non two\tlines", 200, "a reason on two lines", "it is one line"),
]


@pytest.mark.parametrize("text,width,shown", [c[:3] for c in CASES], ids=[c[3] for c in CASES])
def test_a_long_text_is_cut_at_a_word_with_an_ellipsis(text: str, width: int, shown: str) -> None:
    assert shorten(text, width) == shown
    assert len(shorten(text, width)) <= width
