"""The policy's `topology` and `placement` sections (`core/placement/rules.py`): tiers narrowest
first and scoring weights, every mistake refused with the field it is in."""

from __future__ import annotations

from typing import Any

import pytest

from extender.core.placement.rules import parse_topology, parse_weights
from extender.core.placement.scoring import ScoreWeights
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Tier


class Refused(Exception):
    pass


def fail(where: str, why: str) -> Exception:
    return Refused(f"{where}: {why}")


def refusal(parse: Any, raw: Any) -> str:
    with pytest.raises(Refused) as refused:
        parse(raw, fail)
    return str(refused.value)


def test_no_sections_mean_the_default_tiers_and_weights() -> None:
    assert parse_topology(None, fail) is DEFAULT_TOPOLOGY
    assert parse_weights(None, fail) == ScoreWeights()


def test_tiers_are_read_narrowest_first() -> None:
    topology = parse_topology(
        {
            "tiers": [
                {"name": "rack", "labels": ["rack", "zone-rack"]},
                {"name": "zone", "labels": ["z"]},
            ]
        },
        fail,
    )
    assert topology.tiers == (Tier("rack", ("rack", "zone-rack")), Tier("zone", ("z",)))


def test_a_tier_named_twice_or_without_labels_is_refused_with_its_field() -> None:
    twice = {"tiers": [{"name": "a", "labels": ["x"]}, {"name": "a", "labels": ["y"]}]}
    assert (
        refusal(parse_topology, twice)
        == "topology.tiers[1].name: 'a' must be a new, non-empty name"
    )
    bare = {"tiers": [{"name": "a", "labels": []}]}
    assert (
        refusal(parse_topology, bare)
        == "topology.tiers[0].labels: must be a list of node label keys"
    )
    assert refusal(parse_topology, {"tiers": []}).startswith("topology.tiers: ")
    assert refusal(parse_topology, {"levels": []}).startswith("topology: ")


def test_weights_are_numbers_from_0_to_100_under_known_names() -> None:
    weights = parse_weights({"weights": {"binpack": 0.5, "keepGpuNodes": 4}}, fail)
    assert weights == ScoreWeights(binpack=0.5, keep_gpu_nodes=4.0)
    assert refusal(parse_weights, {"weights": {"speed": 1}}) == (
        "placement.weights.speed: unknown (known: binpack, dataLocality, fragmentation, gpuModel, "
        "keepGpuNodes, linkBudget, preferredNodes)"
    )
    assert refusal(parse_weights, {"weights": {"binpack": 101}}) == (
        "placement.weights.binpack: 101 must be a number from 0 to 100"
    )
    assert refusal(parse_weights, {"weights": {"binpack": True}}).startswith(
        "placement.weights.binpack: True"
    )
