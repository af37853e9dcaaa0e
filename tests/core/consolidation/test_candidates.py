"""Whether a plan's moves place every pod (`core/consolidation/candidates.py`): the move planner
counts GPUs only, so each moved pod is checked against its new node's other resources and its
constraints, and each waiting pod against its node once the moved pods left."""

from __future__ import annotations

import pytest

from extender.core.consolidation.candidates import placeable
from extender.core.consolidation.plan import MovePlan
from extender.kube.convert import pod_from_api
from tests.builders import node, pod
from tests.cluster import Cluster

CASES = [
    ("a moved pod that fits its new node in every resource is placed", "8", {}, True),
    ("a moved pod whose new node lacks the CPU it asks for is not", "2", {}, False),
    (
        "a moved pod whose node selector its new node does not match is not",
        "8",
        {"zone": "b"},
        False,
    ),
]


@pytest.mark.parametrize(
    ("cpu", "selector", "placed"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_a_plan_is_placeable_only_when_every_moved_pod_may_go_to_its_new_node(
    cpu: str, selector: dict[str, str], placed: bool
) -> None:
    moved_raw = pod("a-1", gpu=4, cpu="4", node="n0", phase="Running", node_selector=selector)
    waiting_raw = pod("w-1", gpu=8, cpu="4")
    snapshot = Cluster(
        nodes=[node("n0"), node("n1", cpu=cpu, labels={"zone": "a"})],
        pods=[moved_raw, waiting_raw],
    ).snap()
    moved, waiting = pod_from_api(moved_raw), pod_from_api(waiting_raw)
    plan = MovePlan(
        moves=((moved.job, {moved.uid: ("n0", "n1")}),),
        assignments={waiting.uid: "n0"},
        gpus_moved=4,
    )
    assert placeable(snapshot, [waiting], plan, {moved.job: [moved]}) is placed
