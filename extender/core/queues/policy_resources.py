"""Resource names and amounts as a policy writes them: which amounts are whole, which names look
mistyped.

A fraction of a resource counted in whole units (GPUs, pods, extended resources) is refused
(`resource_amount`). A resource name that looks mistyped (`nvidia.com/gpuu`) is not refused but
warned about (`Policy.warnings`, `resource_warnings` against what the cluster's nodes offer).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping
from typing import Any

from extender.core.model.quantity import QuantityError, exact_quantity, parse_quantity
from extender.core.queues.policy import Policy, QueueSpec

# Resource names a node offers or a pod asks for in most clusters, the commonest first: a policy
# naming something else close to one of these probably mistyped it. `pods`: one per pod.
WELL_KNOWN_RESOURCES = (
    "cpu",
    "memory",
    "ephemeral-storage",
    "pods",
    "hugepages-2Mi",
    "hugepages-1Gi",
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "nvidia.com/mig-1g.10gb",
    "nvidia.com/mig-2g.20gb",
    "nvidia.com/mig-3g.40gb",
    "nvidia.com/mig-7g.80gb",
    "amd.com/gpu",
    "gpu.intel.com/i915",
    "gpu.intel.com/xe",
    "habana.ai/gaudi",
    "aws.amazon.com/neuron",
    "aws.amazon.com/neuroncore",
    "aws.amazon.com/neurondevice",
    "vpc.amazonaws.com/efa",
    "google.com/tpu",
)
_WELL_KNOWN_PATTERN = re.compile(r"^(hugepages-[0-9]+[KMG]i|nvidia\.com/mig-[0-9a-z.+-]+)$")
# Resources written with fractions: cpu (millicores) and bytes; all others come in whole units.
_FRACTIONAL = re.compile(r"^(cpu|memory|ephemeral-storage|storage|hugepages-.+)$")


def resource_amount(resource: str, value: Any) -> int:
    """An amount of `resource` as a policy writes it (cpu in millicores). QuantityError for what
    is no quantity, and for a fraction of a resource counted in whole units (`2.5` GPUs), which
    rounding would silently turn into a different number."""
    amount = parse_quantity(value, milli=(resource == "cpu"))
    if not _FRACTIONAL.match(resource) and exact_quantity(value) % 1:
        written = value if isinstance(value, str) else repr(value)
        raise QuantityError(
            f"{written!r} is not a whole number ({resource} is counted in whole units)"
        )
    return amount


def unknown_resource(name: str, offered: Collection[str] = ()) -> str | None:
    """Why `name` is probably not what the policy means (None when it looks right): a name no pod
    can ask for, or, where the cluster is known (`offered`: what its nodes offer and its pods ask
    for), a name nobody uses; else, with no cluster to ask, a name close to a well-known one.
    The message names the nearest known name."""
    if name in offered or name in WELL_KNOWN_RESOURCES or _WELL_KNOWN_PATTERN.match(name):
        return None
    known = [*WELL_KNOWN_RESOURCES, *sorted(set(offered).difference(WELL_KNOWN_RESOURCES))]
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    if "/" not in name:
        close = close or [k for k in known if k.rpartition("/")[2] == name][:1]
        problem = f"{name!r} is not a resource a pod can ask for (extended ones are domain/name)"
    elif offered:
        problem = f"no node offers {name!r} and no pod asks for it"
    elif close:
        problem = f"{name!r} is not a resource name gangplank knows"
    else:
        return None  # any domain may name an extended resource: only the cluster can tell
    return problem + (f"; did you mean {close[0]!r}?" if close else "")


def resource_warnings(policy: Policy, offered: Collection[str] = ()) -> tuple[str, ...]:
    """The policy's resource names that look wrong against `offered` (see `unknown_resource`)."""
    return queue_resource_warnings(policy.queues, policy.source, offered)


def queue_resource_warnings(
    queues: Mapping[str, QueueSpec], source: str, offered: Collection[str]
) -> tuple[str, ...]:
    out: list[str] = []
    for spec in queues.values():
        seen: set[str] = set()
        for key, amounts in (("guarantee", spec.guarantee), ("max", spec.max)):
            for name in amounts:
                problem = None if name in seen else unknown_resource(name, offered)
                seen.add(name)
                if problem:
                    out.append(f"{source}: queue {spec.name}: {key}.{name}: {problem}")
    return tuple(out)
