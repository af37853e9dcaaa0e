"""The queue book is incremental; whatever happens, it must equal a fresh recount."""

from __future__ import annotations

import random
from typing import Any

from extender.core.queues.book import QueueBook
from extender.core.queues.policy_parse import parse_policy
from tests.builders import gpus, node, pod, policy_doc, queue
from tests.cluster import Cluster

POLICY = parse_policy(
    policy_doc(
        queue("ml", guarantee=gpus(16)),
        queue("vision", parent="ml", guarantee=gpus(8), namespaces=["vision"]),
        queue("nlp", parent="ml", guarantee=gpus(4), namespaces=["nlp"]),
        queue("prod", guarantee=gpus(24), namespaces=["prod"]),
        queue("old", state="closed", namespaces=["old"]),
        queue("scratch", namespaces=["scratch"]),
    )
)
NAMESPACES = ["vision", "nlp", "prod", "old", "scratch", "elsewhere"]


def figures(book: QueueBook) -> dict[str, Any]:
    def clean(d: dict[str, int]) -> dict[str, int]:
        return {k: v for k, v in d.items() if v}

    return {
        name: (
            clean(s.used),
            clean(s.reserved),
            clean(s.demand),
            clean(s.protected),
            s.waiting_jobs,
            [j.key for j in book.waiting(name)],
        )
        for name, s in book.state.items()
    }


def test_the_incremental_book_always_equals_a_fresh_recount() -> None:
    rng = random.Random(3)
    c = Cluster(nodes=[node(f"n{i}", gpu=8) for i in range(6)])
    book = QueueBook(POLICY)
    pods: dict[str, dict[str, Any]] = {}
    for step in range(1000):
        action = rng.random()
        if action < 0.4 or not pods:
            raw = pod(
                f"p{step}",
                namespace=rng.choice(NAMESPACES),
                gpu=rng.choice([1, 2, 4]),
                priority=rng.choice([0, 10]),
                labels={"gangplank.io/queue": "nlp"} if rng.random() < 0.1 else {},
            )
            pods[raw["metadata"]["name"]] = raw
            c.add("pods", raw)
        else:
            name = rng.choice(sorted(pods))
            raw = pods[name]
            if action < 0.7 and not raw["spec"].get("nodeName"):
                raw = {**raw, "spec": {**raw["spec"], "nodeName": f"n{rng.randrange(6)}"}}
                pods[name] = raw
                c.add("pods", raw)
            elif action < 0.85:
                c.add("pods", {**raw, "status": {"phase": "Succeeded"}})
                del pods[name]
            else:
                c.delete("pods", raw)
                del pods[name]
        reservations = (
            {"vision": {"nvidia.com/gpu": rng.randrange(4)}} if rng.random() < 0.3 else {}
        )
        planned = (
            {f"pod:vision/{rng.choice(sorted(pods))}"} if pods and rng.random() < 0.3 else set()
        )
        if rng.random() < 0.5:
            c.snap()  # a snapshot the book does not read (prioritize, metrics): it catches up
            continue
        if pods and rng.random() < 0.05:
            for _ in range(70):  # more changes than the store's log keeps: a full look
                c.add("pods", next(iter(pods.values())))
                c.snap()
        snap = c.snap()
        book.refresh(snap, reservations, planned)
        fresh = QueueBook(POLICY)
        fresh.refresh(snap, reservations, planned)
        assert figures(book) == figures(fresh), f"step {step}"
        assert book.idle == fresh.idle
        # And against a count made here, from the pods themselves.
        for leaf in ("vision", "nlp", "prod", "scratch"):
            mine = [
                p
                for p in pods.values()
                if (p["metadata"]["labels"].get("gangplank.io/queue") or p["metadata"]["namespace"])
                == leaf
            ]
            bound = sum(int(gpu_of(p)) for p in mine if p["spec"].get("nodeName"))
            extra = reservations.get(leaf, {}).get("nvidia.com/gpu", 0)
            assert book.state[leaf].used.get("nvidia.com/gpu", 0) == bound + extra
            waiting = {
                f"pod:{p['metadata']['namespace']}/{p['metadata']['name']}"
                for p in mine
                if not p["spec"].get("nodeName")
            }
            assert {j.key for j in book.waiting(leaf)} == waiting - planned


def gpu_of(raw: dict[str, Any]) -> str:
    return str(raw["spec"]["containers"][0]["resources"]["requests"].get("nvidia.com/gpu", "0"))
