"""Guarantees (`core/queues/guarantees.py`): what each queue is guaranteed (a parent that leaves a
resource out guarantees its children's sum), and what of it the work waiting under it holds back
from borrowers."""

from __future__ import annotations

from extender.core.model.resources import GPU
from extender.core.queues.guarantees import guarantees, protected
from extender.core.queues.policy_parse import parse_policy
from tests.builders import policy_doc, queue


def test_a_parent_guarantees_what_it_names_and_its_childrens_sum_of_the_rest() -> None:
    policy = parse_policy(
        policy_doc(
            queue("ml", guarantee={GPU: 20}),
            queue("vision", parent="ml", guarantee={GPU: 4, "cpu": 8}),
            queue("nlp", parent="ml", guarantee={GPU: 6, "cpu": 2}),
            queue("alone"),
        )
    )
    assert guarantees(policy) == {
        "vision": {GPU: 4, "cpu": 8000},
        "nlp": {GPU: 6, "cpu": 2000},
        "ml": {GPU: 20, "cpu": 10_000},
        "alone": {},
    }


def test_a_guarantee_holds_back_what_waiting_work_needs_and_the_queue_does_not_have() -> None:
    assert protected({GPU: 16}, {GPU: 4}, {GPU: 8}, {GPU: 2}, {}) == {GPU: 8}
    assert protected({GPU: 16}, {GPU: 12}, {GPU: 8}, {GPU: 2}, {}) == {GPU: 4}, "what is left"


def test_nothing_is_held_back_for_work_that_must_borrow_anyway() -> None:
    assert protected({GPU: 16}, {GPU: 12}, {GPU: 8}, {GPU: 8}, {}) == {}, "8 needed, 4 left"


def test_a_queue_holds_back_at_least_what_its_children_do() -> None:
    assert protected({GPU: 16}, {GPU: 16}, {GPU: 8}, {GPU: 8}, {GPU: 2}) == {GPU: 2}
    assert protected({GPU: 16}, {GPU: 0}, {GPU: 8}, {GPU: 1}, {GPU: 2}) == {GPU: 8}
    assert protected({}, {}, {}, {}, {GPU: 0}) == {}, "nothing held back is left out"
