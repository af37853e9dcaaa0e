"""The policy file: its schema, every mistake refused with file, queue and field, and which
queue a pod is in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from extender.cli import main
from extender.core.policy import PolicyError, parse_policy
from extender.policy_file import load_policy
from tests.builders import gpus, policy_doc, queue

POLICIES = Path(__file__).resolve().parent.parent / "policies"

BAD: list[tuple[str, Any, str]] = [
    (
        "an unknown key in a queue",
        policy_doc({"name": "research", "gaurantee": gpus(4)}),
        "queue research: unknown field 'gaurantee'",
    ),
    (
        "an unknown key at the top",
        {**policy_doc(), "queue": []},
        "top level: unknown field 'queue'",
    ),
    (
        "a negative quantity",
        policy_doc(queue("research", guarantee={"nvidia.com/gpu": -2})),
        "queue research: guarantee.nvidia.com/gpu: '-2' is negative",
    ),
    (
        "a malformed quantity",
        policy_doc(queue("research", guarantee={"memory": "2Tx"})),
        "queue research: guarantee.memory: '2Tx' is not a quantity",
    ),
    (
        "an unknown parent",
        policy_doc(queue("research", parent="ml")),
        "queue research: parent: no queue is named 'ml'",
    ),
    (
        "a cycle",
        policy_doc(queue("a", parent="b"), queue("b", parent="a")),
        "queue a: parent: queues form a cycle (a -> b -> a)",
    ),
    (
        "children guaranteed more than their parent",
        policy_doc(
            queue("ml", guarantee=gpus(16)),
            queue("vision", parent="ml", guarantee=gpus(12)),
            queue("nlp", parent="ml", guarantee=gpus(8)),
        ),
        "queue ml: guarantee.nvidia.com/gpu: 16 is less than its children guarantee together "
        "(20: vision 12, nlp 8)",
    ),
    (
        "a max below the guarantee",
        policy_doc(queue("research", guarantee=gpus(16), max=gpus(8))),
        "queue research: max.nvidia.com/gpu: 8 is below its guarantee of 16",
    ),
    (
        "a duplicate name",
        policy_doc(queue("research"), queue("research")),
        "queue research: name used twice",
    ),
    (
        "a namespace claimed twice",
        policy_doc(queue("a", namespaces=["ml"]), queue("b", namespaces=["ml"])),
        "queue b: namespaces: 'ml' is already claimed by queue a",
    ),
    (
        "a name that is not a DNS label",
        policy_doc(queue("Research_Team")),
        "queues[0].name: 'Research_Team' is not a DNS label",
    ),
    (
        "a weight of zero",
        policy_doc(queue("research", weight=0)),
        "queue research: weight: 0 must be a number above 0",
    ),
    (
        "an unknown state",
        policy_doc(queue("research", state="paused")),
        "queue research: state: 'paused' is not one of open, closed, draining",
    ),
    (
        "namespaces on a parent queue",
        policy_doc(queue("ml", namespaces=["ml"]), queue("vision", parent="ml")),
        "queue ml: namespaces: a queue with child queues holds no work of its own",
    ),
    (
        "an alias that names another queue",
        policy_doc(queue("a"), queue("b", aliases=["a"])),
        "queue b: aliases: 'a' already names queue a",
    ),
]


@pytest.mark.parametrize(
    "doc,message", [b[1:] for b in BAD], ids=[f"{b[0]} is refused" for b in BAD]
)
def test_a_policy_with_a_mistake_is_refused_naming_file_queue_and_field(
    doc: Any, message: str
) -> None:
    with pytest.raises(PolicyError) as err:
        parse_policy(doc, "policy.yaml")
    assert str(err.value).startswith("policy.yaml: ")
    assert message in str(err.value)


def test_the_shipped_example_and_minimal_policies_are_valid() -> None:
    example = load_policy(POLICIES / "example.yaml")
    assert set(example.queues) >= {"production", "research", "vision", "language", "best-effort"}
    assert example.queues["vision"].parent == "research"
    assert example.queues["best-effort"].guarantee == {}
    assert len(load_policy(POLICIES / "minimal.yaml").queues) == 2


def test_quantities_are_read_as_kubernetes_reads_them() -> None:
    p = parse_policy(policy_doc(queue("q", guarantee={"cpu": "250m", "memory": "2Ti"})))
    assert p.queues["q"].guarantee == {"cpu": 250, "memory": 2 * 2**40}


def test_a_queue_label_names_the_queue_and_else_the_namespace_decides() -> None:
    p = parse_policy(
        policy_doc(
            queue("vision", namespaces=["vision", "team-*"]),
            queue("exact", namespaces=["team-x"]),
            queue("llm", aliases=["llm/team-llm", "shared-llm"]),
        )
    )
    assert p.resolve("", "vision") == ("vision", "")
    assert p.resolve("", "team-y") == ("vision", ""), "a pattern"
    assert p.resolve("", "team-x") == ("exact", ""), "an exact namespace beats a pattern"
    assert p.resolve("", "elsewhere") == (None, ""), "in no queue: not gangplank's business"
    assert p.resolve("llm", "vision") == ("llm", ""), "the label beats the namespace"
    assert p.resolve("team-llm", "llm") == ("llm", ""), "a Kueue LocalQueue alias ns/name"
    assert p.resolve("team-llm", "other") == (None, "queue 'team-llm' does not exist"), (
        "the alias holds in its own namespace only"
    )
    assert p.resolve("shared-llm", "any") == ("llm", "")
    assert p.resolve("reserch", "x", "gangplank.io/queue") == (
        None,
        "queue 'reserch' does not exist (pod label gangplank.io/queue)",
    )


def test_a_parent_without_a_guarantee_guarantees_what_its_children_do() -> None:
    from extender.core.queues import QueueBook

    p = parse_policy(
        policy_doc(
            queue("ml"),
            queue("a", parent="ml", guarantee=gpus(4)),
            queue("b", parent="ml", guarantee=gpus(6)),
        )
    )
    assert QueueBook(p).guarantee["ml"] == {"nvidia.com/gpu": 10}


def test_policy_check_exits_0_for_a_valid_file_and_2_naming_the_mistake(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["policy", "check", str(POLICIES / "example.yaml")]) == 0
    assert "valid, 6 queues" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text("queues:\n  - name: research\n    max: {nvidia.com/gpu: lots}\n")
    assert main(["policy", "check", str(bad)]) == 2
    assert f"{bad}: queue research: max.nvidia.com/gpu: 'lots' is not a quantity" in (
        capsys.readouterr().err
    )
    missing = tmp_path / "missing.yaml"
    assert main(["policy", "check", str(missing)]) == 2
    assert "cannot read" in capsys.readouterr().err
