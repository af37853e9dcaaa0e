"""The policy's `fairness:` section: a half-life and a window, or no history at all."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.queues.fairness import Fairness
from extender.core.queues.policy_parse import PolicyError, parse_policy
from tests.builders import policy_doc, queue


def with_fairness(section: Any) -> Fairness:
    return parse_policy({**policy_doc(queue("a")), "fairness": section}, "policy.yaml").fairness


@pytest.mark.parametrize(
    ("section", "fairness"),
    [
        (None, Fairness(0.0, 7 * 86400.0)),
        ({"halfLife": "24h", "window": "7d"}, Fairness(86400.0, 7 * 86400.0)),
        ({"halfLife": "12h"}, Fairness(43200.0, 7 * 86400.0)),
        ({"halfLife": 0}, Fairness(0.0, 7 * 86400.0)),
    ],
    ids=[
        "no section keeps no history",
        "a half-life of a day over a week",
        "the window is a week unless written",
        "a half-life of 0 keeps no history",
    ],
)
def test_the_fairness_section_reads_as_half_life_and_window(
    section: Any, fairness: Fairness
) -> None:
    assert with_fairness(section) == fairness
    assert fairness.on == (fairness.half_life > 0)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ("24h", "policy.yaml: fairness: must be a map (halfLife, window)"),
        ({"halflife": "24h"}, "policy.yaml: fairness: unknown field 'halflife' (known: halfLife"),
        ({"halfLife": "a day"}, "policy.yaml: fairness.halfLife: 'a day' is not a duration"),
        ({"halfLife": "-1h"}, "policy.yaml: fairness.halfLife: '-1h' is negative"),
        (
            {"halfLife": "2d", "window": "1d"},
            "policy.yaml: fairness.window: 24h is shorter than the half-life (48h)",
        ),
    ],
    ids=[
        "a bare duration is refused",
        "a misspelt field is refused naming the known ones",
        "a half-life that is not a duration is refused",
        "a negative half-life is refused",
        "a window shorter than the half-life is refused",
    ],
)
def test_a_fairness_mistake_is_refused_naming_the_field(section: Any, message: str) -> None:
    with pytest.raises(PolicyError) as err:
        with_fairness(section)
    assert str(err.value).startswith(message), str(err.value)
