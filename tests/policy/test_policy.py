"""The policy file: its schema, every mistake refused with file, queue and field, and which
queue a pod is in."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from extender.cli.main import main
from extender.core.queues.policy_parse import PolicyError, parse_policy
from extender.core.queues.policy_resources import unknown_resource
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.policy.file import PolicyWatcher, load_policy
from extender.service.runtime import Runtime
from extender.service.settings import parse_serve_settings
from tests.builders import gpus, policy_doc, queue
from tests.conftest import fixture_store

POLICIES = Path(__file__).resolve().parents[2] / "policies"

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
    (
        "an alias listed twice in one queue",
        policy_doc(queue("a", aliases=["ml/team", "ml/team"])),
        "queue a: aliases: 'ml/team' is listed twice",
    ),
    (
        "an alias of two queues",
        policy_doc(queue("a", aliases=["ml/team"]), queue("b", aliases=["ml/team"])),
        "queue b: aliases: 'ml/team' already names queue a",
    ),
    (
        "a fraction of a GPU as a ceiling",
        policy_doc(queue("research", guarantee=gpus(2), max={"nvidia.com/gpu": 2.5})),
        "queue research: max.nvidia.com/gpu: '2.5' is not a whole number "
        "(nvidia.com/gpu is counted in whole units)",
    ),
    (
        "half a GPU as a guarantee",
        policy_doc(queue("research", guarantee={"nvidia.com/gpu": 0.5})),
        "queue research: guarantee.nvidia.com/gpu: '0.5' is not a whole number",
    ),
    (
        "a fraction of a GPU in millis",
        policy_doc(queue("research", max={"nvidia.com/gpu": "2500m"})),
        "queue research: max.nvidia.com/gpu: '2500m' is not a whole number",
    ),
    (
        "a fraction of a pod",
        policy_doc(queue("research", max={"pods": "10.5"})),
        "queue research: max.pods: '10.5' is not a whole number (pods is counted in whole units)",
    ),
    (
        "a fraction of an extended resource",
        policy_doc(queue("research", max={"example.com/fpga": 1.25})),
        "queue research: max.example.com/fpga: '1.25' is not a whole number",
    ),
    (
        "a consolidation allow that is not a boolean",
        policy_doc({"name": "research", "consolidation": {"allow": "yes"}}),
        "queue research: consolidation.allow: 'yes' must be true or false",
    ),
    (
        "a queue's own moves per minute (a policy-wide budget)",
        policy_doc({"name": "research", "consolidation": {"movesPerMinute": 3}}),
        "queue research: consolidation: unknown field 'movesPerMinute'",
    ),
    (
        "a negative moves per minute",
        {**policy_doc(), "consolidation": {"movesPerMinute": -1}},
        "consolidation.movesPerMinute: -1 must be 0 to 1000",
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


@pytest.mark.parametrize(
    "amounts,expected",
    [
        ({"cpu": "0.5", "memory": "1.5Gi"}, {"cpu": 500, "memory": 3 * 2**29}),
        ({"nvidia.com/gpu": "2000m", "pods": 2.0}, {"nvidia.com/gpu": 2, "pods": 2}),
    ],
    ids=[
        "cpu and memory take fractions (millicores, bytes)",
        "a whole number written with a fraction is a whole number",
    ],
)
def test_fractions_that_are_whole_amounts_are_accepted(
    amounts: dict[str, Any], expected: dict[str, int]
) -> None:
    assert parse_policy(policy_doc(queue("q", guarantee=amounts))).queues["q"].guarantee == expected


DUPLICATE_KEYS = [
    (
        "a queue's guarantee given twice",
        "queues:\n  - name: research\n    guarantee: {nvidia.com/gpu: 8}\n"
        "    max: {nvidia.com/gpu: 16}\n    guarantee: {nvidia.com/gpu: 2}\n",
        "line 5: 'guarantee' is given twice in one map (first on line 3)",
    ),
    (
        "the queues list given twice",
        "queues: [{name: a}]\nqueues: [{name: b}]\n",
        "line 2: 'queues' is given twice in one map (first on line 1)",
    ),
    (
        "a resource given twice in one flow map",
        "queues:\n  - name: a\n    max: {nvidia.com/gpu: 8, nvidia.com/gpu: 4}\n",
        "line 3: 'nvidia.com/gpu' is given twice in one map (first on line 3)",
    ),
]


@pytest.mark.parametrize(
    "text,message",
    [d[1:] for d in DUPLICATE_KEYS],
    ids=[f"{d[0]} is refused with its line" for d in DUPLICATE_KEYS],
)
def test_a_key_given_twice_is_refused_not_overwritten(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(text)
    with pytest.raises(PolicyError) as err:
        load_policy(path)
    assert str(err.value) == f"{path}: {message}; remove one"


def test_a_merge_key_is_not_a_key_given_twice(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "queues:\n  - &base {name: a, guarantee: {nvidia.com/gpu: 8}}\n  - <<: *base\n    name: b\n"
    )
    assert load_policy(path).queues["b"].guarantee == {"nvidia.com/gpu": 8}


RESOURCE_NAMES: list[tuple[str, frozenset[str], str | None]] = [
    (
        "nvidia.com/gpuu",
        frozenset(),
        "'nvidia.com/gpuu' is not a resource name gangplank knows; did you mean 'nvidia.com/gpu'?",
    ),
    (
        "gpu",
        frozenset(),
        "'gpu' is not a resource a pod can ask for (extended ones are domain/name); "
        "did you mean 'nvidia.com/gpu'?",
    ),
    ("example.com/fpga", frozenset(), None),
    ("example.com/fpga", frozenset({"example.com/fpga", "cpu"}), None),
    (
        "example.com/fpgaa",
        frozenset({"example.com/fpga", "cpu"}),
        "no node offers 'example.com/fpgaa' and no pod asks for it; "
        "did you mean 'example.com/fpga'?",
    ),
    ("nvidia.com/mig-1g.5gb", frozenset(), None),
    ("hugepages-2Mi", frozenset(), None),
]


@pytest.mark.parametrize(
    "name,offered,warning",
    RESOURCE_NAMES,
    ids=[
        "a typo of a well-known name is warned about, naming it",
        "a bare name no pod can ask for is warned about, naming the nearest",
        "an unknown domain's resource is not questioned without a cluster to ask",
        "a resource the cluster's nodes offer is fine",
        "a name no node offers is warned about, naming the nearest that one does",
        "a MIG profile is well known",
        "a hugepages size is well known",
    ],
)
def test_a_resource_name_nobody_uses_is_warned_about(
    name: str, offered: frozenset[str], warning: str | None
) -> None:
    assert unknown_resource(name, offered) == warning


def test_a_policy_with_a_mistyped_resource_loads_with_a_warning_that_policy_check_shows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("queues:\n  - name: research\n    max: {nvidia.com/gpuu: 8, cpu: 64}\n")
    policy = load_policy(path)
    assert policy.queues["research"].max["nvidia.com/gpuu"] == 8, "loaded all the same"
    warning = (
        f"{path}: queue research: max.nvidia.com/gpuu: 'nvidia.com/gpuu' is not a resource name "
        "gangplank knows; did you mean 'nvidia.com/gpu'?"
    )
    assert policy.warnings == (warning,)
    assert main(["policy", "check", str(path)]) == 0
    captured = capsys.readouterr()
    assert "valid, 1 queue\n" in captured.out
    assert captured.err == f"warning: {warning}\n"


def test_the_server_logs_a_policys_warnings_when_it_loads_and_reloads_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from extender.service.runtime import build_runtime

    path = tmp_path / "policy.yaml"
    path.write_text("queues: [{name: a, max: {nvidia.com/gpuu: 8}}]\n")
    cluster = Path(__file__).resolve().parents[2] / "extender/data/demo-cluster.yaml"
    settings = parse_serve_settings(["--policy", str(path), "--cluster-file", str(cluster)], {})
    with caplog.at_level(logging.WARNING, logger="gangplank.policy"):
        build_runtime(settings)
    assert "did you mean 'nvidia.com/gpu'?" in caplog.text, "at start"
    caplog.clear()
    # On a reload the cluster is known: a resource its nodes do not offer is warned about.
    runtime = Runtime(
        fixture_store(), StoreBinder(), Metrics(), preloaded=True, policy_path=str(path)
    )
    assert runtime.policy_watcher is not None
    path.write_text("queues: [{name: a, max: {example.com/fpga: 2}}]\n")
    with caplog.at_level(logging.WARNING, logger="gangplank.policy"):
        assert runtime.policy_watcher.check()
    assert (
        f"policy warning: {path}: queue a: max.example.com/fpga: no node offers "
        "'example.com/fpga' and no pod asks for it"
    ) in caplog.text


def test_the_policy_watcher_logs_warnings_against_what_the_cluster_offers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "policy.yaml"
    watcher = PolicyWatcher(
        path, lambda p: None, lambda e: None, offered=lambda: {"example.com/fpga"}
    )
    path.write_text("queues: [{name: a, max: {example.com/fpgaa: 2}}]\n")
    with caplog.at_level(logging.WARNING, logger="gangplank.policy"):
        assert watcher.check()
    assert "did you mean 'example.com/fpga'?" in caplog.text


def test_the_shipped_example_and_minimal_policies_are_valid() -> None:
    example = load_policy(POLICIES / "example.yaml")
    assert set(example.queues) >= {"production", "research", "vision", "language", "best-effort"}
    assert example.queues["vision"].parent == "research"
    assert example.queues["best-effort"].guarantee == {}
    assert len(load_policy(POLICIES / "minimal.yaml").queues) == 2
    assert example.warnings == load_policy(POLICIES / "minimal.yaml").warnings == ()


def test_the_shipped_lifecycle_policy_is_valid_and_policy_check_shows_its_rules(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shipped = load_policy(POLICIES / "lifecycle.yaml")
    assert shipped.lifecycle is not None and shipped.warnings == ()
    assert shipped.lifecycle_of("training") == shipped.lifecycle
    assert main(["policy", "check", str(POLICIES / "lifecycle.yaml")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1:] == [
        "  training: guarantee nvidia.com/gpu: 48; max -; namespaces train, train-*",
        "  notebooks: guarantee nvidia.com/gpu: 16; max -; namespaces notebooks; lifecycle: "
        "readyTimeout 10m, requeue 1m to 1h, held after 5, staleGangGrace 5m, maxRuntime 12h, "
        "restartLimit 5, idleGpu below 5% for 1h: evict",
        "  lifecycle (top level): readyTimeout 10m, requeue 1m to 1h, held after 5, "
        "staleGangGrace 5m, maxRuntime none, restartLimit 5, idleGpu below 5% for 30m: report",
    ]


def test_policy_check_shows_the_fairness_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text("fairness: {halfLife: 24h, window: 7d}\nqueues: [{name: a}]\n")
    assert main(["policy", "check", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  fairness: recent use counts in the fair order, halved every 24h, kept 168h"
    )


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
    from extender.core.queues.book import QueueBook

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


def test_policy_check_refuses_a_wrong_link_budget_and_shows_a_good_one(tmp_path: Path) -> None:
    path = tmp_path / "policy.yaml"
    budgets = "topology:\n  budgets:\n    rack:\n      storageRead: {perDomain: %s}\n"
    path.write_text("queues: [{name: q}]\n" + budgets % "200GB")
    check = [sys.executable, "-m", "extender", "policy", "check", str(path)]
    refused = subprocess.run(check, capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert refused.stderr == (
        f"invalid: {path}: topology.budgets.rack.storageRead.perDomain: '200GB' is not a "
        "quantity; did you mean 200G or 200Gi?\n"
    )
    path.write_text("queues: [{name: q}]\n" + budgets % "200Gi")
    valid = subprocess.run(check, capture_output=True, text=True, check=False)
    assert valid.returncode == 0, valid.stderr
    assert (
        "  budget: storageRead 200Gi/s per rack (preferred; pods declare "
        "gangplank.io/storage-read)\n"
    ) in valid.stdout


@pytest.mark.parametrize(
    ("top", "parent", "child", "movable"),
    [
        (None, None, None, False),
        ({"allow": True}, None, None, True),
        ({"allow": True}, None, {"allow": False}, False),
        (None, {"allow": True}, None, True),
        ({"allow": True}, {"allow": False}, {"allow": True}, True),
    ],
    ids=[
        "no consolidation section: no queue's jobs are moved",
        "the top level's allow holds for every queue",
        "a queue's own allow: false wins over the top level",
        "a child queue takes its parent's allow",
        "the nearest queue's allow wins",
    ],
)
def test_whether_a_queues_jobs_may_be_moved_is_the_nearest_consolidation_allow(
    top: dict[str, Any] | None,
    parent: dict[str, Any] | None,
    child: dict[str, Any] | None,
    movable: bool,
) -> None:
    ml: dict[str, Any] = {"name": "ml"}
    vision: dict[str, Any] = {"name": "vision", "parent": "ml", "namespaces": ["vision"]}
    if parent is not None:
        ml["consolidation"] = parent
    if child is not None:
        vision["consolidation"] = child
    doc = policy_doc(ml, vision)
    if top is not None:
        doc["consolidation"] = top
    policy = parse_policy(doc)
    assert policy.movable_queue("vision") is movable
    assert policy.consolidation.moves_per_minute == 2


def test_policy_check_shows_which_queues_jobs_may_be_moved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "policy.yaml"
    path.write_text(
        "consolidation: {movesPerMinute: 3}\n"
        "queues:\n"
        "  - {name: research, namespaces: [research], consolidation: {allow: true}}\n"
        "  - {name: prod, namespaces: [prod], consolidation: {allow: false}}\n"
    )
    assert main(["policy", "check", str(path)]) == 0
    assert capsys.readouterr().out.splitlines()[1:] == [
        "  research: guarantee -; max -; namespaces research; its jobs may be moved",
        "  prod: guarantee -; max -; namespaces prod; its jobs stay",
        "  consolidation (top level): labelled jobs and the queues' above may be moved to make "
        "room, at most 3 a minute",
    ]
