"""Writing plans' records (`kube/plan_recorder.py`) through the API server: a record computed
later always wins, even when it reaches the writer first."""

from __future__ import annotations

from kubernetes import client

from extender.core import recovery
from extender.core.engine import Engine
from extender.core.gangs.plan_record import PLAN_ANNOTATION, decode
from extender.kube.convert import pod_from_api
from extender.kube.patcher import ApiPatcher
from extender.kube.plan_recorder import PlanRecorder
from tests.builders import gang_pods, node
from tests.cluster import Cluster
from tests.fakeapi import FakeApiServer

NOW = 1_800_000_000.0
RING = "gangplank:default/ring"


def recorded_deadlines(api: FakeApiServer) -> set[float]:
    values = [
        obj["metadata"].get("annotations", {}).get(PLAN_ANNOTATION)
        for obj in api.state.objects["pods"].values()
    ]
    return {record.deadline for value in values if (record := decode(value)) is not None}


def test_a_plans_record_computed_later_remains_when_an_older_one_is_written_after_it(
    fake_api: FakeApiServer,
) -> None:
    members = gang_pods("ring", 2, gpu=8)
    for member in members:
        fake_api.put("pods", member)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    engine = Engine()
    first = pod_from_api(members[0])
    assert engine.filter(cluster.snap(), first, ["n0", "n1"], NOW).passed
    older = recovery.records_to_write(engine, cluster.snap(), key=RING)
    engine.reservations.release(RING)  # the plan lapses and the gang is planned again
    assert engine.filter(cluster.snap(), first, ["n0", "n1"], NOW + 30).passed
    newer = recovery.records_to_write(engine, cluster.snap(), key=RING)
    plan = engine.reservations.get(RING)
    assert plan is not None and older and newer

    core = client.CoreV1Api(client.ApiClient(client.Configuration(host=fake_api.url)))
    recorder = PlanRecorder(ApiPatcher(core))
    try:
        assert recorder.write(newer) == 2
        assert recorder.write(older) == 0, "computed before the newer one: not written"
    finally:
        recorder.close()
    assert recorded_deadlines(fake_api) == {round(plan.deadline, 3)}
