"""Scores for single pods: put each where it strands the fewest GPUs.

The cost of a node for a pod (lower is better) adds, with the policy's weights:
- `fragmentation`: how much the node's GPU fragmentation grows (`fragmentation.py`: free GPUs no
  common job shape of the cluster could use afterwards), in GPUs;
- `keepGpuNodes`: a pod without GPUs on a node with free GPUs pays for the share of the node's
  free CPU and memory it takes (GPU jobs need them);
- `gpuModel`: a pod listing GPU models (`gangplank.io/gpu-product: H100|A100`) prefers the first;
- `binpack`: GPUs (or CPU, for pods without GPUs) left free on the node afterwards: fuller nodes
  first, so whole nodes stay free for whole-node jobs;
- `preferredNodes`: nodes matching the pod's `gangplank.io/prefer-nodes` selector cost less;
- `dataLocality`: nodes near the pod's dataset cost less (the node that caches it most, then its
  rack, then its zone: `data.py`);
- `linkBudget`: nodes of a domain whose link budget the pod's declared use would fill cost more
  (`budgets.py`).

kube-scheduler wants an integer from 0 to 10 per node and picks at random among its best, so the
scores are ranks: the cheapest nodes get 10, the next cost 9, and so on. Nodes in the same state
share a cost, which is computed once and remembered: 5,000 nodes cost one lookup each.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from itertools import repeat

from extender.core.model.answers import MAX_SCORE, NEUTRAL_SCORE, NodeScores
from extender.core.model.resources import GPU
from extender.core.model.snapshot import GpuState, NodeInfo, PodInfo, Snapshot
from extender.core.placement.budgets import declares
from extender.core.placement.data import reads_data
from extender.core.placement.data_plan import data_costs
from extender.core.placement.every_node import NO_FIT, EveryNode, every_node_sent, node_costs, rank
from extender.core.placement.fit import (
    GPU_PRODUCT,
    GPU_PRODUCT_LABEL,
    PREFER_NODES,
    gpu_product_order,
    gpu_products,
    parse_selector,
    selector_misses,
)
from extender.core.placement.fragmentation import (
    DEFAULT_MIX,
    WHOLE,
    FragmentationCache,
    Mix,
    Shape,
    fits,
    state_of,
)
from extender.core.placement.topology import DEFAULT_TOPOLOGY, Topology

MIB = 1 << 20
MIN_LEARN = 100  # pods needed before the cluster's own mix replaces the default one
RELEARN_SHIFT = 0.1  # share of the mix that must move before scores are worked out afresh


@dataclass(frozen=True, slots=True)
class ScoreWeights:
    fragmentation: float = 10.0
    keep_gpu_nodes: float = 3.0
    gpu_model: float = 2.0
    binpack: float = 0.0
    preferred_nodes: float = 2.0
    data_locality: float = 20.0  # two GPUs stranded (fragmentation 10 each) outweigh the data
    link_budget: float = 30.0  # over a budget: last, unless it strands three GPUs less


def shape_of(pod: PodInfo) -> Shape:
    return _shape(*_key(pod))


def node_state(node: NodeInfo) -> GpuState:
    free_gpus = max(0, node.free(GPU))
    return state_of(
        node.labels.get(GPU_PRODUCT_LABEL, ""),
        node.free("cpu"),
        node.free("memory") // MIB,
        (WHOLE,) * free_gpus,
    )


def rank_scores(costs: Mapping[str, float]) -> dict[str, int]:
    """10 for the cheapest cost, 9 for the next, ... 0 from the eleventh on."""
    levels = sorted(set(costs.values()))[:MAX_SCORE]
    score = {cost: MAX_SCORE - i for i, cost in enumerate(levels)}
    return {name: score.get(cost, 0) for name, cost in costs.items()}


class PlacementScorer:
    """Costs of placing a pod shape on node states, for one mix and one set of weights."""

    def __init__(self, weights: ScoreWeights | None = None, mix: Mix = DEFAULT_MIX) -> None:
        self.weights = weights or ScoreWeights()
        self.topology: Topology = DEFAULT_TOPOLOGY  # the policy's tiers and link budgets
        # The pods of plans not bound yet, with their nodes (`GangPlacer.reserved_pods`).
        self.reserved: Callable[[Snapshot], Sequence[tuple[PodInfo, str]]] = _none_reserved
        self.frag = FragmentationCache(mix)
        self._costs: dict[tuple[Shape, tuple[str, ...]], dict[GpuState, float | None]] = {}
        self._states: dict[str, tuple[NodeInfo, GpuState]] = {}
        self._by_id: dict[tuple[Shape, tuple[str, ...]], dict[int, float]] = {}
        self._epoch: tuple[int, int] = (0, -1)
        # Scores of every node the cache knows, by pod shape, for one state of all nodes.
        self._every: dict[tuple[Shape, tuple[str, ...]], EveryNode] = {}

    @property
    def mix(self) -> Mix:
        return self.frag.mix

    def learn(self, mix: Mix) -> None:
        """Use the cluster's own mix of job shapes (`mix_of`) from now on, once it differs
        enough from the one in use (every change drops what was remembered)."""
        old = dict(self.frag.mix.shapes)
        new = dict(mix.shapes)
        moved = sum(abs(new.get(s, 0.0) - old.get(s, 0.0)) for s in {*old, *new}) / 2
        if moved > RELEARN_SHIFT:
            self.frag = FragmentationCache(mix)
            self._costs.clear()
            self._by_id.clear()
            self._every.clear()

    def set_weights(self, weights: ScoreWeights) -> None:
        if weights != self.weights:
            self.weights = weights
            self._costs.clear()
            self._by_id.clear()
            self._every.clear()

    def cost(self, state: GpuState, shape: Shape, order: tuple[str, ...] = ()) -> float | None:
        """The cost of `shape` on a node in `state`; None when it does not fit."""
        table = self._table(shape, order)
        if state in table:
            return table[state]
        value = self._cost(state, shape, order)
        if len(table) > 50_000:
            table.clear()
        table[state] = value
        return value

    def _cost(self, state: GpuState, shape: Shape, order: tuple[str, ...]) -> float | None:
        if not fits(state, shape):
            return None
        w = self.weights
        grow, after, _ = self.frag.best(state, shape)
        cost = w.fragmentation * grow / WHOLE
        model, cpu, memory, gpus = state
        if not shape.gpus and gpus:
            taken = max(shape.cpu / max(cpu, 1), shape.memory / max(memory, 1))
            cost += w.keep_gpu_nodes * taken
        if shape.gpus and order and model in order:
            cost += w.gpu_model * order.index(model) / len(order)
        if shape.gpus:
            cost += w.binpack * sum(after[3]) / (8 * WHOLE)
        else:
            cost += w.binpack * after[1] / 128_000
        return round(cost, 6)

    def state(self, node: NodeInfo) -> GpuState:
        known = self._states.get(node.name)
        if known is not None and known[0] is node:
            return known[1]
        state = node_state(node)
        self._states[node.name] = (node, state)
        return state

    def scores(self, snapshot: Snapshot, pod: PodInfo, names: Sequence[str]) -> NodeScores:
        """Scores for the nodes kube-scheduler sent. Neutral where GPUs play no part (and no data
        or link budget does)."""
        near = reads_data(pod) or declares(pod, self.topology.budgets)
        if not snapshot.capacity.get(GPU, 0) and not near:
            return NodeScores(NEUTRAL_SCORE)
        shape = shape_of(pod)
        order = gpu_product_order(pod.annotations.get(GPU_PRODUCT, "")) if shape.models else ()
        ids = snapshot.node_states
        if len(ids) != len(snapshot.nodes):  # a snapshot made without them
            return self._scores_by_state(snapshot, pod, names, shape, order)
        epoch = (snapshot.origin, snapshot.state_epoch)
        if epoch != self._epoch:
            self._epoch = epoch
            self._by_id.clear()
            self._every.clear()
        table = self._by_id.get((shape, order))
        if table is None:
            if len(self._by_id) > 4096:
                self._by_id.clear()
            table = self._by_id[(shape, order)] = {}

        def costs_of(sids: Sequence[int]) -> list[float]:
            return self._state_costs(snapshot, table, sids, shape, order)

        if (
            snapshot.states_version < 0
            or PREFER_NODES in pod.annotations
            or near
            or not every_node_sent(names, ids)
        ):
            costs = node_costs(list(map(ids.get, names, repeat(-1))), costs_of)
            return self._ranked(snapshot, pod, names, costs, near)
        # Every node sent (percentageOfNodesToScore: 100), the very nodes the cache knows: the
        # scores of every node, in the cache's order, kept up to date per pod shape
        # (`every_node.py`). The same object comes back while no node changes state.
        every = self._every.get((shape, order))
        if every is None or (
            every.version != snapshot.states_version and not every.catch_up(snapshot, costs_of)
        ):
            if len(self._every) > 64:
                self._every.clear()
            every = self._every[(shape, order)] = EveryNode(snapshot, costs_of)
        return every.scores

    def _state_costs(
        self,
        snapshot: Snapshot,
        table: dict[int, float],
        sids: Sequence[int],
        shape: Shape,
        order: tuple[str, ...],
    ) -> list[float]:
        """The cost of each state id (NO_FIT where it does not fit, or -1: unknown), worked out
        once per state and remembered in `table`."""
        costs = list(map(table.get, sids, repeat(_MISSING)))
        if _MISSING in costs:
            states = snapshot.states
            for i, cost in enumerate(costs):
                if cost == _MISSING:
                    state = states.get(sids[i])
                    value = self.cost(state, shape, order) if state is not None else None
                    costs[i] = NO_FIT if value is None else value
                    if state is not None:
                        table[sids[i]] = costs[i]
        return costs

    def _scores_by_state(
        self,
        snapshot: Snapshot,
        pod: PodInfo,
        names: Sequence[str],
        shape: Shape,
        order: tuple[str, ...],
    ) -> NodeScores:
        nodes = snapshot.nodes
        costs: list[float] = []
        for name in names:
            node = nodes.get(name)
            value = None if node is None else self.cost(self.state(node), shape, order)
            costs.append(NO_FIT if value is None else value)
        near = reads_data(pod) or declares(pod, self.topology.budgets)
        return self._ranked(snapshot, pod, names, costs, near)

    def _ranked(
        self,
        snapshot: Snapshot,
        pod: PodInfo,
        names: Sequence[str],
        costs: list[float],
        near: bool = False,
    ) -> NodeScores:
        if near:
            w = self.weights
            data_costs(
                snapshot,
                pod,
                names,
                costs,
                self.topology,
                partial(self.reserved, snapshot),
                w.data_locality,
                w.link_budget,
            )
        preferred = pod.annotations.get(PREFER_NODES) if pod.annotations else None
        if preferred:
            terms = parse_selector(preferred)
            bonus = self.weights.preferred_nodes
            nodes = snapshot.nodes
            for i, name in enumerate(names):
                node = nodes.get(name)
                cost = costs[i]
                if cost != NO_FIT and node and not selector_misses(terms, node.labels):
                    costs[i] = cost - bonus
        return NodeScores(0, names=names, listed=list(map(rank(costs).get, costs, repeat(0))))

    def _table(self, shape: Shape, order: tuple[str, ...]) -> dict[GpuState, float | None]:
        table = self._costs.get((shape, order))
        if table is None:
            if len(self._costs) > 4096:
                self._costs.clear()
            table = self._costs[(shape, order)] = {}
        return table


def _none_reserved(snapshot: Snapshot) -> Sequence[tuple[PodInfo, str]]:
    return ()


_MISSING = -1e300  # not worked out yet (floats compare fast, in C)


def mix_of(snapshot: Snapshot) -> Mix | None:
    """The mix of shapes of the pods the cluster runs and waits to run; None while too few pods
    say what it runs. Counted on plain tuples: 50,000 pods in tens of milliseconds."""
    counts: Counter[tuple[int, int, int, str]] = Counter()
    for node in snapshot.nodes.values():
        counts.update(_key(pod) for pod in node.pods if not pod.terminal)
    for pending in snapshot.queue_pending.values():
        counts.update(_key(pod) for pod in pending)
    if counts.total() < MIN_LEARN:
        return None
    return Mix.counted({_shape(*key): n for key, n in counts.items()})


def _key(pod: PodInfo) -> tuple[int, int, int, str]:
    requests = pod.requests
    notes = pod.annotations
    return (
        requests.get("cpu", 0),
        requests.get("memory", 0) // MIB,
        requests.get(GPU, 0),
        notes.get(GPU_PRODUCT, "") if notes else "",
    )


def _shape(cpu: int, memory: int, gpus: int, models: str) -> Shape:
    return Shape(cpu=cpu, memory=memory, gpus=gpus, models=gpu_products(models))
