"""The policy model (`core/queues/policy.py`), built as the parser builds it: the tree, the rules
of each queue, the resources quota governs, and which queue a namespace falls in."""

from __future__ import annotations

from extender.core.model.resources import GPU
from extender.core.queues.policy import Policy, PreemptionRules, QueueSpec, describe_amounts

GENTLE = PreemptionRules(within_queue=False, min_runtime=600.0, grace_seconds=120)
STRICT = PreemptionRules(reclaimable=False)


def policy(*specs: QueueSpec) -> Policy:
    return Policy({spec.name: spec for spec in specs}, defaults=STRICT)


TREE = policy(
    QueueSpec("ml", guarantee={GPU: 16}),
    QueueSpec("vision", parent="ml", max={"cpu": 64_000}, rules=GENTLE),
    QueueSpec("nlp", parent="ml"),
    QueueSpec("batch"),
)


def test_the_tree_gives_each_queue_its_children_and_its_path_to_the_root() -> None:
    assert TREE.children == {None: ("ml", "batch"), "ml": ("vision", "nlp")}
    assert TREE.path("vision") == ("vision", "ml")
    assert TREE.path("batch") == ("batch",)
    assert not TREE.is_leaf("ml") and TREE.is_leaf("nlp")


def test_a_queue_has_its_own_preemption_rules_or_else_the_policys_defaults() -> None:
    assert TREE.rules("vision") is GENTLE
    assert TREE.rules("nlp") is STRICT, "no rules of its own"
    assert TREE.rules(None) is STRICT, "pods in no queue"


def test_quota_governs_the_resources_some_queue_names_only() -> None:
    assert TREE.resources == {GPU, "cpu"}


def test_a_namespace_falls_in_its_exact_queue_else_the_longest_pattern() -> None:
    by_namespace = policy(
        QueueSpec("teams", namespaces=("team-*",)),
        QueueSpec("vision", namespaces=("team-vision-*",)),
        QueueSpec("x", namespaces=("team-vision-x",)),
    )
    assert by_namespace.namespace_queue("team-nlp") == "teams"
    assert by_namespace.namespace_queue("team-vision-y") == "vision", "the longer pattern"
    assert by_namespace.namespace_queue("team-vision-x") == "x", "exact beats any pattern"
    assert by_namespace.namespace_queue("default") is None
    assert by_namespace.resolve("", "team-vision-y") == ("vision", "")


def test_amounts_are_described_by_name_cpu_in_cores_memory_in_binary_units() -> None:
    assert describe_amounts({GPU: 8, "cpu": 1500, "memory": 2**30}) == (
        "cpu: 1.5, memory: 1Gi, nvidia.com/gpu: 8"
    )
    assert describe_amounts({}) == "-"
