"""`gangplank policy import`: Kueue and Volcano queues become a policy that means what they
meant, and what cannot be carried over is said.

The corpus in data/upstream/ has the shapes of Kueue's and Volcano's own examples (each file says
which one it mirrors); each file is imported and checked for what it maps and what it reports."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.cli.main import main
from extender.core.engine import Engine
from extender.core.queues.policy_parse import parse_policy
from extender.kube.convert import pod_from_api
from extender.policy.importing import ImportRefused, import_manifests, import_sources
from tests.builders import node, pod
from tests.cluster import Cluster

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).parents[1] / "data" / "policy-import"
UPSTREAM = Path(__file__).parents[1] / "data" / "upstream"
GANGPLANK = Path(sys.executable).parent / "gangplank"  # the console script a user runs


def run(capsys: pytest.CaptureFixture[str], *files: str) -> tuple[int, dict[str, Any], str]:
    code, doc, _, err = run_text(capsys, *files)
    return code, doc, err


def run_text(
    capsys: pytest.CaptureFixture[str], *files: str
) -> tuple[int, dict[str, Any], str, str]:
    """Exit code, the policy printed, the text printed (comments and all), stderr."""
    code = main(["policy", "import", *files])
    captured = capsys.readouterr()
    return code, yaml.safe_load(captured.out) or {}, captured.out, captured.err


def queues_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {q["name"]: q for q in doc.get("queues") or []}


@dataclass
class Upstream:
    """An upstream-shaped file and what importing it must give: the queues (each with at least
    these fields, as written in the output), lines of the `Mapped` header and notes of what is
    not mapped (substrings)."""

    file: str
    queues: dict[str, dict[str, Any]]
    mapped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    top: dict[str, Any] = field(default_factory=dict)  # the policy's other fields, whole
    quiet: bool = False  # nothing at all to report as not mapped


NO_RECLAIM = {"withinQueue": False, "reclaimable": False}
CORPUS = [
    Upstream(
        "kueue/single-clusterqueue-setup.yaml",
        {
            "cluster-queue": {
                "guarantee": {"cpu": "9", "memory": "36Gi", "pods": "5"},
                "max": {"cpu": "9", "memory": "36Gi", "nvidia.com/gpu": "0", "pods": "5"},
                "aliases": ["default/user-queue"],
                "preemption": NO_RECLAIM,
            }
        },
        mapped=[
            "ClusterQueue cluster-queue: the pods quota is kept: gangplank counts one `pods` per "
            "pod",
            "ClusterQueue cluster-queue: in no cohort, so Kueue lets it borrow nothing: max = "
            "its nominal quota",
            "ClusterQueue cluster-queue: withinQueue: false (withinClusterQueue Never, Kueue's "
            "default), reclaimable: false (in no cohort)",
            "ClusterQueue cluster-queue: namespaceSelector {} (every namespace): no namespace is "
            "kept out, as in Kueue",
        ],
        quiet=True,
    ),
    Upstream(
        "kueue/shared-quota-setup.yaml",
        {
            "team-cluster-queue": {
                "guarantee": {"cpu": "18"},
                "max": {"cpu": "18", "nvidia.com/gpu": "0"},
                "aliases": ["default/team-queue"],
            }
        },
        notes=[
            "ClusterQueue team-cluster-queue: cpu_credits left out: no pod asks for it (a virtual "
            "resource",
            "ClusterQueue team-cluster-queue: flavors on-demand, spot merged into one quota",
            "ClusterQueue team-cluster-queue: dropping cpu_credits raises the cap on cpu: with "
            "one cpu_credits per cpu (Kueue's resource transformation, in its Configuration, not "
            "in this input), Kueue admitted cpu 14 over all flavors together; imported, max cpu "
            "is 18 (set max cpu: 14 to keep Kueue's cap)",
        ],
    ),
    Upstream(
        "kueue/admission-fair-sharing-setup.yaml",
        {"cluster-queue": {"guarantee": {"cpu": "9"}, "aliases": ["default/lq-a", "default/lq-b"]}},
        notes=[
            "ClusterQueue cluster-queue: queueingStrategy StrictFIFO not mapped",
            "ClusterQueue cluster-queue: admissionScope not mapped",
            "LocalQueue default/lq-a: fairSharing.weight 1 not mapped (a LocalQueue becomes an "
            "alias of queue cluster-queue",
            "LocalQueue default/lq-b: fairSharing.weight 1 not mapped",
        ],
    ),
    Upstream(
        "kueue/hierarchical-cohorts.yaml",
        {
            "root-cohort": {"max": {"cpu": "37", "memory": "100Gi", "nvidia.com/gpu": "16"}},
            "important-org": {
                "parent": "root-cohort",
                "weight": 0.75,
                "guarantee": {"cpu": "33", "memory": "84Gi", "nvidia.com/gpu": "16"},
            },
            "regular-org": {"parent": "root-cohort", "weight": 0.25},
            "team-a-cq": {
                "parent": "important-org",
                "weight": 2,
                "max": {"nvidia.com/gpu": "16"},
                "preemption": {"withinQueue": True, "reclaimable": True},
            },
            "team-b-cq": {
                "state": "closed",
                "preemption": {"withinQueue": False, "reclaimable": True},
            },
            "batch-cq": {"parent": "regular-org", "state": "closed"},
        },
        mapped=[
            "Cohort important-org: fairSharing.weight 0.75 -> weight 0.75",
            "Cohort regular-org: fairSharing.weight 0.25 -> weight 0.25",
            "ClusterQueue team-a-cq: fairSharing.weight 2 -> weight 2",
            "ClusterQueue team-b-cq: stopPolicy Hold -> state closed (admitted work runs on)",
            "ClusterQueue team-a-cq: withinQueue: true (withinClusterQueue LowerPriority), "
            "reclaimable: true (reclaimWithinCohort of batch-cq LowerPriority)",
            "Cohort root-cohort: max = what its tree is guaranteed",
        ],
        notes=[
            "ClusterQueue batch-cq: stopPolicy HoldAndDrain became state closed: nothing new is "
            "admitted, but what runs is not evicted as Kueue would",
            "ClusterQueue team-a-cq: flavorFungibility not mapped (gangplank has no flavors)",
            "ClusterQueue batch-cq: borrowWithinCohort LowerPriority not mapped",
            "ClusterQueue team-a-cq: reclaim differs: in gangplank every queue reclaims what this "
            "one borrows, at any priority; in Kueue only batch-cq LowerPriority",
        ],
    ),
    Upstream(
        "kueue/cohort-coverage.yaml",
        {
            "research": {
                "guarantee": {"cpu": "48", "memory": "192Gi", "nvidia.com/gpu": "12"},
                "max": {"cpu": "48", "memory": "192Gi", "nvidia.com/gpu": "12"},
            },
            "gpu-team": {"parent": "research", "max": None, "aliases": ["default/adhoc"]},
            "cpu-team": {
                "parent": "research",
                "guarantee": {"cpu": "32", "memory": "128Gi"},
                "max": {"nvidia.com/gpu": "0"},
                "namespaces": ["data"],
            },
            "paused": {
                "parent": "research",
                "guarantee": None,
                "max": {"cpu": "0", "memory": "0", "nvidia.com/gpu": "0"},
            },
            "unselected": {
                "state": "closed",
                "max": {"cpu": "4", "memory": "0", "nvidia.com/gpu": "0"},
            },
        },
        mapped=[
            "ClusterQueue cpu-team: covers cpu, memory only: max 0 of nvidia.com/gpu (Kueue "
            "admits no workload that asks for a resource its ClusterQueue does not cover, nor "
            "lends it one from its cohort)",
            "ClusterQueue unselected: covers cpu only: max 0 of memory, nvidia.com/gpu (Kueue "
            "admits no workload that asks for a resource its ClusterQueue does not cover)",
            "ClusterQueue paused: no resourceGroups, so Kueue admits nothing to it: max 0 of cpu, "
            "memory, nvidia.com/gpu",
            "ClusterQueue unselected: no namespaceSelector, so Kueue admits workloads from no "
            "namespace (a missing selector matches none): state closed",
            "ClusterQueue gpu-team: namespaceSelector {} (every namespace): no namespace is kept "
            "out, as in Kueue",
        ],
        notes=[
            "Cohort archive: no ClusterQueue in it or under it, so nothing is admitted through "
            "it: dropped (as a queue it would take work with no max); its quota nvidia.com/gpu 4 "
            "is added to Cohort research's, which its tree borrows as in Kueue",
            "Cohort spare: no ClusterQueue in it or under it, so nothing is admitted through it: "
            "dropped (as a queue it would take work with no max); its quota cpu 8 served no "
            "ClusterQueue",
            "LocalQueue default/adhoc: no metadata.namespace: taken as namespace default (kubectl "
            "apply would put it in the namespace of your context); set metadata.namespace to the "
            "namespace of its pods",
        ],
    ),
    Upstream(
        "kueue/tas-gpu-queues.yaml",
        {
            "tas-cluster-queue": {
                "guarantee": {"cpu": "100", "memory": "100Gi", "nvidia.com/gpu": "16"},
                "aliases": ["default/tas-user-queue"],
            }
        },
        top={
            "topology": {
                "tiers": [
                    {"name": "host", "labels": ["kubernetes.io/hostname"]},
                    {"name": "rack", "labels": ["cloud.provider.com/topology-rack"]},
                    {"name": "block", "labels": ["cloud.provider.com/topology-block"]},
                ]
            }
        },
        mapped=[
            "Topology default: levels -> topology.tiers host, rack, block (narrowest first, "
            "in place of gangplank's default tiers; Kueue's podset-required-topology and "
            "podset-preferred-topology annotations name these node labels and are read as they "
            "are)",
        ],
        notes=[
            "ResourceFlavor tas-flavor: nodeLabels cloud.provider.com/node-group=tas-group no "
            "longer steer pods (Kueue gave them as a nodeSelector to the pods it admitted on this "
            "flavor): give the workloads a nodeSelector or node affinity on them (a gangplank "
            "policy has no node rules)",
            "ResourceFlavor tas-flavor: tolerations nvidia.com/gpu Exists NoSchedule no longer "
            "reach pods (Kueue added them to the pods it admitted on this flavor): add them to "
            "the workloads' pod templates",
        ],
    ),
    Upstream(
        "kueue/kubectl-get-defaults.yaml",
        {
            "cluster-queue": {
                "guarantee": {"cpu": "9", "memory": "36Gi"},
                "max": {"cpu": "9", "memory": "36Gi", "nvidia.com/gpu": "0"},
                "aliases": ["default/user-queue"],
                "preemption": NO_RECLAIM,
            }
        },
        quiet=True,
    ),
    Upstream(
        "volcano/hierarchical-jobs-queues.yaml",
        {
            "root": {},
            "root-eng": {"parent": "root", "weight": 2},
            "root-eng-prod": {"parent": "root-eng", "weight": 8},
            "root-eng-dev": {"parent": "root-eng", "weight": 2},
            "root-sci": {"parent": "root", "weight": 8},
            "root-sci-prod": {"parent": "root-sci", "weight": 8},
            "root-sci-dev": {"parent": "root-sci", "weight": 2},
        },
        mapped=[
            "root: the top of Volcano's queue tree -> a parent queue",
            "volcano.sh/hierarchy root/eng -> parent queue root-eng of root-eng-prod, root-eng-dev",
            "Queue root-eng-prod: weight 8 from volcano.sh/hierarchy-weights (hierarchical DRF); "
            "spec.weight 1 (the proportion plugin's) not used",
        ],
    ),
    Upstream(
        "volcano/capacity-hierarchical-queues.yaml",
        {
            "root": {"max": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "16"}},
            "engineering": {"parent": "root", "weight": 3, "max": {"nvidia.com/gpu": "16"}},
            "eng-backend": {"parent": "engineering", "guarantee": {"nvidia.com/gpu": "8"}},
            "test": {"parent": "root", "preemption": {"reclaimable": False}, "max": {"cpu": "2"}},
            "retired": {"parent": "root", "state": "closed"},
        },
        notes=["Queue eng-backend: guarantee.resource not mapped; deserved is used"],
    ),
    Upstream(
        "volcano/kubectl-get-queues.yaml",
        {
            "default": {"weight": 1, "preemption": None},
            "prod": {"weight": 4, "max": {"nvidia.com/gpu": "32"}},
            "batch": {"weight": 1},
        },
        notes=[
            "Queues default, prod, batch: weights 1, 4, 1 are shares of the cluster in Volcano's "
            "proportion plugin (each queue deserved 1/6, 4/6, 1/6 of it, up to its capability, "
            "and got back what others borrowed of that); in gangplank a weight orders admission "
            "between sibling queues (dominant share against weight) and guarantees nothing: "
            "give a queue a guarantee for the share it must get",
            "Queue prod: priority 100 not mapped (in Volcano a queue of higher priority is "
            "scheduled first and reclaimed from last; gangplank orders queues by their share "
            "against their weight, and reclaims what any queue borrowed beyond its guarantee: "
            "give the queue a larger weight or a guarantee, and preemption.reclaimable: false "
            "to keep what it borrows)",
            "Queue batch: dequeueStrategy fifo not mapped (in Volcano a job at the head of the "
            "queue that cannot start holds back every job behind it; gangplank starts a later "
            "job that fits without delaying the first)",
        ],
    ),
    Upstream(
        "volcano/dequeue-strategies-queues.yaml",
        {
            name: {"weight": 10, "max": {"cpu": "4", "memory": "8Gi"}}
            for name in ("fifo-queue", "traverse-queue", "default-queue")
        },
        mapped=["Queue traverse-queue: volcano.sh/dequeue-strategy traverse is gangplank's order"],
        notes=["Queue fifo-queue: volcano.sh/dequeue-strategy fifo not mapped"],
    ),
]


@pytest.mark.parametrize(
    "case",
    CORPUS,
    ids=[f"{c.file} maps its queues and reports what it does not carry over" for c in CORPUS],
)
def test_an_upstream_example_is_imported_with_what_it_maps_and_what_it_reports(
    case: Upstream,
) -> None:
    done = gangplank("policy", "import", str(UPSTREAM / case.file))  # as a user runs it
    out, err = done.stdout, done.stderr
    assert done.returncode == 0, err
    doc = yaml.safe_load(out)
    parse_policy(doc, case.file)
    queues = queues_of(doc)
    assert set(queues) == set(case.queues), "no queue missing, none made up"
    for name, fields in case.queues.items():
        assert {k: queues[name].get(k) for k in fields} == fields, name
    mapped = out.partition("# Mapped (the meaning kept, and how):\n")[2].split("# Not mapped")[0]
    for line in case.mapped:
        assert f"#   - {line}" in mapped, line
    for note in case.notes:
        assert f"not mapped: {note}" in err, note
        assert f"#   - {note}" in out, note
    assert {k: doc.get(k) for k in case.top} == case.top
    if case.quiet:
        assert "not mapped" not in err and "# Not mapped" not in out, err


def test_every_upstream_shaped_file_says_which_upstream_example_it_mirrors() -> None:
    files = sorted(UPSTREAM.rglob("*.yaml"))
    assert {str(f.relative_to(UPSTREAM)) for f in files} == {c.file for c in CORPUS}
    for path in files:
        assert path.read_text().startswith("# Mirrors "), path


def gangplank(*args: str) -> subprocess.CompletedProcess[str]:
    """`gangplank ARGS...` as a user runs it: the console script, in a process of its own (this
    checkout's code first on its path)."""
    return subprocess.run(
        [str(GANGPLANK), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=60,
    )


def test_gangplank_policy_import_as_a_user_runs_it_prints_the_tree_and_what_it_mapped() -> None:
    done = gangplank("policy", "import", str(UPSTREAM / "volcano/hierarchical-jobs-queues.yaml"))
    assert done.returncode == 0, done.stderr
    policy = parse_policy(yaml.safe_load(done.stdout))
    assert policy.path("root-sci-dev") == ("root-sci-dev", "root-sci", "root")
    assert policy.queues["root-sci"].weight == 8 and policy.queues["root-eng"].weight == 2
    assert done.stdout.startswith("# Imported by `gangplank policy import` from ")
    assert "#   - volcano.sh/hierarchy root/sci -> parent queue root-sci" in done.stdout


def test_two_files_defining_the_same_queue_are_refused_naming_both() -> None:
    kueue = UPSTREAM / "kueue"
    first, second = (
        kueue / "single-clusterqueue-setup.yaml",
        kueue / "admission-fair-sharing-setup.yaml",
    )
    done = gangplank("policy", "import", str(first), str(second))
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"gangplank policy import: ClusterQueue cluster-queue is defined in {first} and in "
        f"{second}; import each object once\n"
    )


def local_queue(namespace: str, name: str, target: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"namespace": namespace, "name": name},
        "spec": {"clusterQueue": target},
    }


def cluster_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": spec,
    }


def volcano_queue(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": name},
        "spec": spec,
    }


def gpu_quota(nominal: Any) -> list[dict[str, Any]]:
    resources = [{"name": "nvidia.com/gpu", "nominalQuota": nominal}]
    return [
        {"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "a", "resources": resources}]}
    ]


REFUSED = [
    (
        "the same LocalQueue in two files",
        [
            ("a.yaml", [cluster_queue("cq"), local_queue("ml", "team", "cq")]),
            ("b.yaml", [local_queue("ml", "team", "cq")]),
        ],
        "LocalQueue ml/team is defined in a.yaml and in b.yaml",
    ),
    (
        "a ClusterQueue and a Volcano queue of one name",
        [("kueue.yaml", [cluster_queue("ml")]), ("volcano.yaml", [volcano_queue("ml")])],
        "ClusterQueue ml (kueue.yaml) and Queue ml (volcano.yaml) would both be queue ml",
    ),
    (
        "two ClusterQueues that become one queue name",
        [("a.yaml", [cluster_queue("team.a"), cluster_queue("team-a")])],
        "ClusterQueue team.a (a.yaml) and ClusterQueue team-a (a.yaml) would both be queue team-a",
    ),
]


@pytest.mark.parametrize(
    "sources,message", [r[1:] for r in REFUSED], ids=[f"{r[0]} is refused" for r in REFUSED]
)
def test_an_object_imported_twice_is_refused_naming_both_places(
    sources: list[tuple[str, list[dict[str, Any]]]], message: str
) -> None:
    with pytest.raises(ImportRefused) as err:
        import_sources(sources)
    assert message in str(err.value)


@pytest.mark.parametrize(
    "document,message",
    [
        (
            cluster_queue("cq", resourceGroups=5),
            "ClusterQueue cq (input): spec.resourceGroups is int, not a list",
        ),
        (
            cluster_queue("cq", resourceGroups=[{"coveredResources": "cpu", "flavors": 3}]),
            "ClusterQueue cq (input): spec.resourceGroups[0].coveredResources is str, not a list",
        ),
        (
            cluster_queue("cq", resourceGroups=[{"flavors": [{"name": "f", "resources": [1]}]}]),
            "ClusterQueue cq (input): spec.resourceGroups[0].flavors[0].resources[0] is int, not "
            "a map",
        ),
        ({**cluster_queue("cq"), "metadata": 7}, "a ClusterQueue in input: metadata is not a map"),
        ({**cluster_queue("cq"), "metadata": {}}, "a ClusterQueue in input has no metadata.name"),
        ({**cluster_queue("cq"), "spec": 5}, "ClusterQueue cq (input): spec is not a map"),
        (
            volcano_queue("q", capability=[1]),
            "Queue q (input): spec.capability is list, not a map",
        ),
    ],
    ids=[
        "resourceGroups not a list",
        "coveredResources not a list",
        "a flavor's resource not a map",
        "metadata not a map",
        "no name (imported as a queue named 'queue' before)",
        "spec not a map (imported with exit 0 before)",
        "a Volcano capability not a map",
    ],
)
def test_an_object_of_the_wrong_shape_is_refused_naming_the_field(
    document: dict[str, Any], message: str
) -> None:
    # each was a TypeError or AttributeError traceback (or a silent import) before
    with pytest.raises(ImportRefused) as err:
        import_manifests([document])
    assert str(err.value) == message


@pytest.mark.parametrize("weight", [-2, "abc"])
def test_a_volcano_weight_that_is_not_a_number_above_0_is_a_note_not_dropped_silently(
    weight: Any,
) -> None:
    imported = import_manifests([volcano_queue("q", weight=weight)])
    assert "weight" not in imported.queues["q"]
    assert f"Queue q: weight {weight!r} not mapped (a weight is a number above 0)" in "\n".join(
        imported.notes
    )


def test_a_fraction_of_a_gpu_or_a_zero_weight_is_reported_not_rounded() -> None:
    imported = import_manifests(
        [cluster_queue("cq", resourceGroups=gpu_quota("2.5"), fairSharing={"weight": "0"})]
    )
    assert "guarantee" not in imported.queues["cq"]
    assert "ClusterQueue cq: nvidia.com/gpu '2.5' is not a whole number" in "\n".join(
        imported.notes
    )
    assert any("fairSharing.weight 0 not mapped" in n for n in imported.notes)


def test_an_imported_pods_quota_holds_the_queue_to_that_many_pods(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, doc, _ = run(capsys, str(UPSTREAM / "kueue/single-clusterqueue-setup.yaml"))
    engine = Engine(policy=parse_policy(doc))
    label = {"kueue.x-k8s.io/queue-name": "user-queue"}
    running = [pod(f"r{i}", node="n0", phase="Running", labels=label) for i in range(5)]
    cluster = Cluster(nodes=[node("n0", cpu="64", gpu=0)], pods=running)
    result = engine.filter(cluster.snap(), pod_from_api(pod("sixth", labels=label)), ["n0"], 0.0)
    assert not result.passed
    assert "queue cluster-queue: pods 5 of max 5 in use" in set(result.unresolvable.values()).pop()


# ---- the older, hand-written inputs ----------------------------------------


def test_kueue_cluster_queues_cohorts_and_local_queues_become_a_valid_policy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, out, err = run_text(capsys, str(DATA / "kueue.yaml"))
    assert code == 0, err
    policy = parse_policy(doc)
    team_a = policy.queues["team-a-cq"]
    assert team_a.parent == "research"
    assert team_a.guarantee["nvidia.com/gpu"] == 12, "nominal quotas of both flavors"
    assert team_a.max == {"nvidia.com/gpu": 24}, "nominal + borrowingLimit"
    assert team_a.namespaces == ("team-a",)
    assert policy.resolve("user-queue", "team-a") == ("team-a-cq", ""), "the LocalQueue label"
    assert policy.resolve("user-queue", "team-b") == ("team-b-cq", "")
    assert policy.queues["team-b-cq"].state == "closed", "stopPolicy HoldAndDrain, noted"
    assert policy.queues["research"].guarantee["nvidia.com/gpu"] == 36, "8 own + 12 + 16"
    assert policy.rules("team-b-cq").reclaimable, "team-a-cq reclaims within the cohort"
    assert not policy.rules("team-a-cq").reclaimable, "team-b-cq does not (Kueue's default)"
    for note in (
        "flavors a100, h100 merged",
        "lendingLimit of nvidia.com/gpu not mapped",
        "stopPolicy HoldAndDrain became state closed",
    ):
        assert note in err
    assert "ClusterQueue team-b-cq: namespaceSelector {} (every namespace): no namespace" in out


def test_volcano_queues_become_a_valid_policy_with_their_tree_weights_and_states(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = run(capsys, str(DATA / "volcano.yaml"))
    assert code == 0, err
    policy = parse_policy(doc)
    assert policy.queues["ml"].parent == "root", "Volcano's root is the top of the tree"
    assert policy.queues["ml"].weight == 2
    assert policy.queues["ml-vision"].parent == "ml"
    assert policy.queues["ml-vision"].guarantee == {"nvidia.com/gpu": 16}, "deserved"
    assert policy.queues["ml-vision"].max == {"nvidia.com/gpu": 32}, "capability"
    assert policy.queues["adhoc"].state == "closed"
    assert policy.queues["adhoc"].parent == "root", "no parent: root's child, as in Volcano"
    assert "guarantee.resource not mapped; deserved is used" in err
    assert policy.rules("ml-vision").reclaimable is False, "Volcano reclaimable: false"


def test_both_sources_at_once_and_unmappable_input_is_reported() -> None:
    documents = [
        *yaml.safe_load_all((DATA / "kueue.yaml").read_text()),
        *yaml.safe_load_all((DATA / "volcano.yaml").read_text()),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        volcano_queue("Odd.Name", capability={"nvidia.com/gpu": "lots"}),
    ]
    imported = import_manifests(documents)
    assert "odd-name" in imported.queues
    assert imported.queues["odd-name"]["aliases"] == ["Odd.Name"]
    assert any("nvidia.com/gpu 'lots' is not a quantity" in n for n in imported.notes)
    assert any("ConfigMap x (v1) skipped" in n for n in imported.notes)


def test_import_of_nothing_it_knows_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
    assert main(["policy", "import", str(empty)]) == 2
    assert "no Kueue or Volcano queues found" in capsys.readouterr().err


# ---- YAML mistakes: the file and the line, in words ---------------------------------------

YAML_MISTAKES = [
    (
        "a tab indenting a line",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n\tname: team\n",
        "{path}:4: a tab indents this line; YAML cannot be indented with tabs: indent it with "
        "spaces\n",
    ),
    (
        "a tab among the spaces of a nested map",
        "queues:\n  - name: team\n    max:\n  \t  cpu: 4\n",
        "{path}:4: a tab indents this line; YAML cannot be indented with tabs: indent it with "
        "spaces\n",
    ),
    (
        "a list left open",
        "queues: [\n",
        "{path}:2:1: not valid YAML: did not find expected node content (while parsing a flow "
        "node that starts on line 2)\n",
    ),
]


@pytest.mark.parametrize("command", ["import", "check"])
@pytest.mark.parametrize(
    "text,message",
    [m[1:] for m in YAML_MISTAKES],
    ids=[f"{m[0]} is named by file and line" for m in YAML_MISTAKES],
)
def test_a_yaml_mistake_is_named_by_its_file_and_line_by_import_and_check_alike(
    tmp_path: Path, command: str, text: str, message: str
) -> None:
    path = tmp_path / "queues.yaml"
    path.write_text(text)
    done = gangplank("policy", command, str(path))
    assert done.returncode == 2 and done.stdout == ""
    prefix = "gangplank policy import: " if command == "import" else "invalid: "
    assert done.stderr == prefix + message.format(path=path)
    assert "<unicode string>" not in done.stderr


def test_a_credit_covered_with_cpu_in_one_group_names_the_cap_it_was_and_the_one_it_is() -> None:
    flavors = [
        {"name": name, "resources": [{"name": "cpu", "nominalQuota": cpu}, credits]}
        for name, cpu, credits in (
            ("on-demand", 10, {"name": "cpu_credits", "nominalQuota": 12}),
            ("spot", 6, {"name": "cpu_credits", "nominalQuota": "0"}),
        )
    ]
    group = [{"coveredResources": ["cpu", "cpu_credits"], "flavors": flavors}]
    imported = import_manifests([cluster_queue("cq", resourceGroups=group, namespaceSelector={})])
    assert imported.queues["cq"]["max"] == {"cpu": "16", "nvidia.com/gpu": "0"}
    assert (
        "ClusterQueue cq: dropping cpu_credits raises the cap on cpu: with one cpu_credits per "
        "cpu (Kueue's resource transformation, in its Configuration, not in this input), Kueue "
        "admitted cpu 12 over all flavors together; imported, max cpu is 16 (set max cpu: 12 to "
        "keep Kueue's cap)"
    ) in imported.notes


def test_a_cpu_only_cluster_queue_of_a_cohort_cannot_borrow_the_gpus_of_its_cohort(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, doc, _ = run(capsys, str(UPSTREAM / "kueue/cohort-coverage.yaml"))
    engine = Engine(policy=parse_policy(doc))
    cluster = Cluster(nodes=[node("n0", cpu="64", gpu=8)])
    asks = pod("trainer", namespace="data", gpu=1, labels={"gangplank.io/queue": "cpu-team"})
    result = engine.filter(cluster.snap(), pod_from_api(asks), ["n0"], 0.0)
    assert not result.passed
    assert "queue cpu-team: nvidia.com/gpu" in set(result.unresolvable.values()).pop()
    plain = pod("etl", namespace="data", labels={"gangplank.io/queue": "cpu-team"})
    assert engine.filter(cluster.snap(), pod_from_api(plain), ["n0"], 0.0).passed


# ---- the rest of Kueue's meaning, object by object -------------------------------------------


def kueue(kind: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": kind,
        "metadata": {"name": name},
        "spec": spec,
    }


def topology(name: str, *labels: str) -> dict[str, Any]:
    return kueue("Topology", name, levels=[{"nodeLabel": label} for label in labels])


FUNGIBILITY = [
    (
        "Kueue's defaults",
        {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"},
        False,
    ),
    ("the deprecated spelling of the default", {"whenCanBorrow": "Borrow"}, False),
    ("one half given, as defaulted", {"whenCanPreempt": "TryNextFlavor"}, False),
    ("try the next flavor before borrowing", {"whenCanBorrow": "TryNextFlavor"}, True),
    ("preempt before trying the next flavor", {"whenCanPreempt": "Preempt"}, True),
]


@pytest.mark.parametrize(
    "fungibility,reported",
    [f[1:] for f in FUNGIBILITY],
    ids=[f"flavorFungibility as {f[0]} is {'' if f[2] else 'not '}reported" for f in FUNGIBILITY],
)
def test_flavor_fungibility_is_reported_only_when_it_is_not_kueues_default(
    fungibility: dict[str, str], reported: bool
) -> None:
    imported = import_manifests(
        [cluster_queue("cq", namespaceSelector={}, flavorFungibility=fungibility)]
    )
    assert any("flavorFungibility not mapped" in n for n in imported.notes) is reported


def test_a_flavor_of_one_gpu_model_names_gangplanks_annotation_for_it() -> None:
    h100 = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
    imported = import_manifests([kueue("ResourceFlavor", "h100", nodeLabels=h100)])
    assert imported.notes == [
        "ResourceFlavor h100: nodeLabels nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3 no longer "
        "steer pods (Kueue gave them as a nodeSelector to the pods it admitted on this flavor): "
        "give the workloads a nodeSelector or node affinity on them, or the annotation "
        "gangplank.io/gpu-product: NVIDIA-H100-80GB-HBM3 (a gangplank policy has no node rules)"
    ]


def test_a_flavors_taints_are_said_to_be_left_to_kube_scheduler() -> None:
    taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    imported = import_manifests([kueue("ResourceFlavor", "gpu", nodeTaints=[taint])])
    assert imported.notes == [
        "ResourceFlavor gpu: nodeTaints nvidia.com/gpu=present NoSchedule not checked at "
        "admission (Kueue admitted on this flavor only workloads that tolerate them); "
        "kube-scheduler still keeps pods off nodes with those taints"
    ]


def test_of_two_topologies_the_one_a_flavor_names_becomes_the_tiers_and_the_other_is_noted() -> (
    None
):
    imported = import_manifests(
        [
            topology("cpu-pool", "topology.kubernetes.io/zone", "kubernetes.io/hostname"),
            topology(
                "gpu-fabric",
                "cloud.google.com/gce-topology-block",
                "cloud.google.com/gce-topology-subblock",
                "cloud.google.com/gce-topology-host",
                "kubernetes.io/hostname",
            ),
            kueue("ResourceFlavor", "h100", topologyName="gpu-fabric"),
            cluster_queue("cq", namespaceSelector={}),
        ]
    )
    assert imported.topology == {
        "tiers": [
            {"name": "host", "labels": ["kubernetes.io/hostname"]},
            {"name": "host-2", "labels": ["cloud.google.com/gce-topology-host"]},
            {"name": "rack", "labels": ["cloud.google.com/gce-topology-subblock"]},
            {"name": "block", "labels": ["cloud.google.com/gce-topology-block"]},
        ]
    }
    parse_policy(imported.policy())
    assert (
        "Topology cpu-pool: not mapped (a gangplank policy has one set of tiers: those of "
        "Topology gpu-fabric)"
    ) in imported.notes


def test_a_cohorts_quota_reaches_the_nearest_cohort_above_that_holds_cluster_queues() -> None:
    gpus = gpu_quota(4)
    imported = import_manifests(
        [
            cluster_queue("cq", cohort="org", namespaceSelector={}, resourceGroups=gpu_quota(8)),
            kueue("Cohort", "org"),
            kueue("Cohort", "lab", parent="org"),
            kueue("Cohort", "bench", parent="lab", resourceGroups=gpus),
        ]
    )
    assert set(imported.queues) == {"cq", "org"}
    assert imported.queues["org"]["guarantee"] == {"nvidia.com/gpu": "12"}
    assert any(n.startswith("Cohort lab: no ClusterQueue in it") for n in imported.notes)
    assert any(
        n.startswith("Cohort bench: no ClusterQueue")
        and n.endswith(
            "its quota nvidia.com/gpu 4 is added to Cohort org's, which its tree "
            "borrows as in Kueue"
        )
        for n in imported.notes
    )
    parse_policy(imported.policy())


def test_a_flavor_in_two_files_alike_is_read_once_and_unlike_is_refused() -> None:
    flavor = kueue("ResourceFlavor", "default-flavor")
    labelled = kueue("ResourceFlavor", "default-flavor", nodeLabels={"pool": "a"})
    queue = cluster_queue("cq", namespaceSelector={})
    assert import_sources([("a.yaml", [flavor, queue]), ("b.yaml", [flavor])]).notes == []
    with pytest.raises(ImportRefused) as err:
        import_sources([("a.yaml", [flavor, queue]), ("b.yaml", [labelled])])
    assert "ResourceFlavor default-flavor is defined in a.yaml and in b.yaml" in str(err.value)


def test_resources_a_cluster_queue_excludes_are_not_held_to_a_max() -> None:
    cpu = [
        {
            "coveredResources": ["cpu"],
            "flavors": [{"name": "a", "resources": [{"name": "cpu", "nominalQuota": 4}]}],
        }
    ]
    imported = import_manifests(
        [
            cluster_queue("gpu", namespaceSelector={}, resourceGroups=gpu_quota(8)),
            cluster_queue(
                "cpu",
                namespaceSelector={},
                resourceGroups=cpu,
                excludeResourcePrefixes=["nvidia.com"],
            ),
        ]
    )
    assert imported.queues["cpu"]["max"] == {"cpu": "4"}
    assert imported.queues["gpu"]["max"] == {"cpu": "0", "nvidia.com/gpu": "8"}


def test_volcano_weights_under_one_parent_are_said_to_be_shares_of_it() -> None:
    imported = import_manifests(
        [
            volcano_queue("ml"),
            volcano_queue("ml-train", parent="ml", weight=3),
            volcano_queue("ml-eval", parent="ml"),
        ]
    )
    assert any(
        n.startswith("Queues ml-train, ml-eval (under root/ml): weights 3, 1 are shares")
        and "each queue deserved 3/4, 1/4 of it" in n
        for n in imported.notes
    )
