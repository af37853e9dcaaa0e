"""Which topology domain a gang goes in: the tightest one that holds it.

Tiers are walked narrowest first (NVLink clique, host, rack, block, zone). In each tier the
domains that could hold the gang's largest members are tried tightest first (least room to
spare), and the first one `plan_gang` can place the whole gang in wins: fewest nodes, then fewest
racks, then fewest blocks. A `required` tier ends the walk there: no domain of it holds the gang,
no plan, and the reason names the largest free domain and what it lacks. Without one the gang
falls back to the whole cluster. A partly bound gang stays in its running members' domain.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from extender.core.model.snapshot import NodeInfo, PodInfo, Snapshot
from extender.core.placement.candidates import candidates
from extender.core.placement.fit import how_many_fit
from extender.core.placement.planner import FreeOf, PlanAttempt, describe, plan_gang
from extender.core.placement.topology import Constraint, Tier, Topology, domain_of, domains

TRIES_PER_TIER = 3  # a plan costs O(nodes of the domain); the tightest few are enough


def _largest(pods: Sequence[PodInfo]) -> tuple[PodInfo, int]:
    """The hardest member to place and how many members share its requests."""
    sample = max(
        pods,
        key=lambda p: (p.requests.get("nvidia.com/gpu", 0), p.requests.get("cpu", 0), p.name),
    )
    return sample, sum(1 for p in pods if p.requests == sample.requests)


def plan_in_topology(
    snapshot: Snapshot,
    pods: list[PodInfo],
    needed: int,
    free_of: FreeOf,
    topology: Topology,
    constraint: Constraint,
    *,
    bound: Sequence[PodInfo] = (),
    prefer: Mapping[str, int] | None = None,
    avoid: Mapping[str, Collection[str]] | None = None,
    bounded: bool = False,
    near_data: Mapping[str, int] | None = None,
) -> PlanAttempt:
    """`near_data`: each node's rank by closeness to the gang's data (`data.locality`, lower
    first; nodes left out are far): in each tier the domains nearest its data are tried first,
    then the tightest; inside a domain nodes go by it too unless `prefer` ranks them."""
    if near_data and not prefer:
        prefer = near_data
    required = topology.tier_of(constraint.required)
    if constraint.required and required is None:
        return PlanAttempt(reason=f"required topology {constraint.required!r} is no tier or label")
    if not pods:
        return plan_gang(
            snapshot, pods, needed, free_of, prefer=prefer, avoid=avoid, bounded=bounded
        )
    sample, count = _largest(pods)
    count = min(count, needed) if needed else count
    nodes = snapshot.nodes
    free_of = _once_each(free_of)  # the tiers and the fallback read the same nodes again
    room: dict[str, int] = {}
    for node in candidates(snapshot, sample, bounded=bounded).nodes:
        fit = how_many_fit(sample.requests, free_of(node))
        if fit:
            room[node.name] = fit
    running = [
        nodes[p.node_name] for p in bound if p.node_name is not None and p.node_name in nodes
    ]
    for tier in topology.tiers_up_to(required):
        attempt = _in_tier(
            snapshot,
            pods,
            needed,
            free_of,
            tier,
            room,
            count,
            running,
            prefer,
            avoid,
            bounded,
            near_data,
        )
        if attempt is not None and attempt.ok:
            return attempt
    if required is not None:
        return PlanAttempt(reason=_why_not(snapshot, sample, count, required, room, running))
    return plan_gang(snapshot, pods, needed, free_of, prefer=prefer, avoid=avoid, bounded=bounded)


def _once_each(free_of: FreeOf) -> FreeOf:
    """`free_of`, asked once per node: each caller gets its own copy (plans spend it)."""
    known: dict[str, dict[str, int]] = {}

    def free(node: NodeInfo) -> dict[str, int]:
        room = known.get(node.name)
        if room is None:
            room = known[node.name] = free_of(node)
        return dict(room)

    return free


def _in_tier(
    snapshot: Snapshot,
    pods: list[PodInfo],
    needed: int,
    free_of: FreeOf,
    tier: Tier,
    room: Mapping[str, int],
    count: int,
    running: Sequence[NodeInfo],
    prefer: Mapping[str, int] | None,
    avoid: Mapping[str, Collection[str]] | None,
    bounded: bool,
    near_data: Mapping[str, int] | None = None,
) -> PlanAttempt | None:
    nodes = snapshot.nodes
    index = domains(snapshot, tier)
    sums = _room_by_domain(index.of, room)
    if running:
        home = {domain_of(n, tier) for n in running}
        if len(home) != 1 or None in home:
            return None  # members already run in several domains of this tier
        sums = {v: s for v, s in sums.items() if v in home}
    if near_data:
        far = max(near_data.values(), default=0) + 1
        chosen = sorted(
            (min(near_data.get(n, far) for n in index.members[v]), s, v)
            for v, s in sums.items()
            if s >= count
        )[:TRIES_PER_TIER]
    else:
        chosen = sorted((0, s, v) for v, s in sums.items() if s >= count)[:TRIES_PER_TIER]
    for _, _, value in chosen:
        members = [nodes[name] for name in index.members[value]]
        attempt = plan_gang(
            snapshot,
            pods,
            needed,
            free_of,
            prefer=prefer,
            avoid=avoid,
            nodes=members,
            bounded=bounded,
        )
        if attempt.ok:
            return attempt
    return None


def _room_by_domain(domain: Mapping[str, str], room: Mapping[str, int]) -> dict[str, int]:
    """Members of the largest shape each domain has room for (`domain`: node -> its domain)."""
    sums: dict[str, int] = {}
    for name, fit in room.items():
        value = domain.get(name)
        if value is not None:
            sums[value] = sums.get(value, 0) + fit
    return sums


def _why_not(
    snapshot: Snapshot,
    sample: PodInfo,
    count: int,
    tier: Tier,
    room: Mapping[str, int],
    running: Sequence[NodeInfo],
) -> str:
    index = domains(snapshot, tier)
    sums = _room_by_domain(index.of, room)
    what = f"{count} pod{'s' if count != 1 else ''} of {describe(sample.requests)}"
    if running:
        home = sorted({v for n in running if (v := domain_of(n, tier)) is not None})
        where = f"its running members' {tier.name} {', '.join(home) or '(none)'}"
        have = sum(sums.get(v, 0) for v in home)
        return (
            f"required topology {tier.name}: needs {what} in {where}, which has room for "
            f"{have} (lacks {max(0, count - have)})"
        )
    if not index.of:
        return (
            f"required topology {tier.name}: no node carries a {tier.name} label "
            f"({', '.join(tier.labels)})"
        )
    if not sums:
        return f"required topology {tier.name}: needs {what}; no {tier.name} has room for one"
    value, have = max(sums.items(), key=lambda item: (item[1], item[0]))
    lacks = describe({r: a * (count - have) for r, a in sample.requests.items()})
    return (
        f"required topology {tier.name}: needs {what} in one {tier.name}; the largest free "
        f"{tier.name} {value} has room for {have} (lacks {lacks})"
    )
