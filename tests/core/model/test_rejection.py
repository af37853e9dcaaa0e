"""Why a gang member is parked (`core/model/rejection.py`): three kinds, whose values are the
`reason` labels of the plan-failures metric, and under which the waiting room files each parked
pod."""

from __future__ import annotations

from extender.core.engine import Engine
from extender.core.model.rejection import Rejection
from extender.kube.convert import pod_from_api
from tests.builders import gang_pods, node
from tests.cluster import Cluster


def test_the_kinds_are_invalid_incomplete_and_no_room_as_the_metric_labels_read() -> None:
    assert [str(kind) for kind in Rejection] == ["invalid", "incomplete", "no-room"]
    assert Rejection("no-room") is Rejection.NO_ROOM


def test_a_member_of_a_gang_missing_pods_is_parked_and_counted_as_incomplete() -> None:
    members = gang_pods("g", 1, size=2, gpu=8)
    cluster = Cluster(nodes=[node("n0")], pods=members)
    engine = Engine()
    first = pod_from_api(members[0])
    assert engine.filter(cluster.snap(), first, ["n0"], 0.0).passed == []
    assert engine.waiting.parked_kind("gangplank:default/g", first.uid) is Rejection.INCOMPLETE
    assert engine.take_outcomes().failures == {"incomplete": 1}
