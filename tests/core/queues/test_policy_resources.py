"""Resource names and amounts as a policy writes them (`core/queues/policy_resources.py`): whole
units stay whole; a name that looks mistyped is warned about, naming the nearest known one."""

from __future__ import annotations

import pytest

from extender.core.model.quantity import QuantityError
from extender.core.queues.policy import Policy, QueueSpec
from extender.core.queues.policy_resources import (
    resource_amount,
    resource_warnings,
    unknown_resource,
)


def test_fractions_are_read_for_cpu_and_bytes_only() -> None:
    assert resource_amount("cpu", "2.5") == 2500, "millicores"
    assert resource_amount("memory", "1.5Gi") == 3 * 2**29
    assert resource_amount("nvidia.com/gpu", 2) == 2
    with pytest.raises(QuantityError) as raised:
        resource_amount("nvidia.com/gpu", "2.5")
    assert (
        str(raised.value)
        == "'2.5' is not a whole number (nvidia.com/gpu is counted in whole units)"
    )


def test_well_known_names_and_what_the_cluster_offers_look_right() -> None:
    assert unknown_resource("nvidia.com/gpu") is None
    assert unknown_resource("nvidia.com/mig-4g.40gb") is None, "any MIG profile"
    assert unknown_resource("example.com/fpga", offered={"example.com/fpga"}) is None
    assert unknown_resource("example.com/fpga") is None, "with no cluster to ask, any domain may"


def test_a_mistyped_name_is_told_with_the_nearest_known_one() -> None:
    assert unknown_resource("nvidia.com/gpuu") == (
        "'nvidia.com/gpuu' is not a resource name gangplank knows; did you mean 'nvidia.com/gpu'?"
    )
    assert unknown_resource("gpu") == (
        "'gpu' is not a resource a pod can ask for (extended ones are domain/name); "
        "did you mean 'nvidia.com/gpu'?"
    )
    assert unknown_resource("example.com/fpgaa", offered={"example.com/fpga"}) == (
        "no node offers 'example.com/fpgaa' and no pod asks for it; "
        "did you mean 'example.com/fpga'?"
    )


def test_a_policys_warnings_name_its_source_queue_and_field_once_per_name() -> None:
    spec = QueueSpec("q", guarantee={"nvidia.com/gpuu": 1}, max={"nvidia.com/gpuu": 2, "cpu": 4})
    policy = Policy({"q": spec}, source="policy.yaml")
    assert resource_warnings(policy) == (
        "policy.yaml: queue q: guarantee.nvidia.com/gpuu: 'nvidia.com/gpuu' is not a resource "
        "name gangplank knows; did you mean 'nvidia.com/gpu'?",
    )
