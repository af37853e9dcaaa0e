"""The core's pass-through decisions and the rule for nodes the cache has not seen
(`core/placement/node_filter.py`)."""

from __future__ import annotations

from extender.core.model.snapshot import Snapshot
from extender.core.placement.node_filter import decide_filter
from tests.builders import node_info, pod_info

SNAP = Snapshot(nodes={"n1": node_info("n1"), "n2": node_info("n2")})


def test_a_plain_pod_passes_every_node_even_ones_the_cache_does_not_know() -> None:
    result = decide_filter(SNAP, pod_info(), ["n1", "n2", "n9"])
    assert result.passed == ["n1", "n2", "n9"] and not result.failed


def test_a_queued_pod_fails_unknown_nodes_as_resolvable_with_a_reason() -> None:
    pod = pod_info(name="w-0", namespace="ml", labels={"gangplank.io/queue": "team-a"})
    result = decide_filter(SNAP, pod, ["n1", "n9"])
    assert result.passed == ["n1"]
    assert set(result.failed) == {"n9"} and not result.unresolvable
    assert "ml/w-0" in result.failed["n9"] and "n9" in result.failed["n9"]
