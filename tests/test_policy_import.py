"""`gangplank policy import`: Kueue and Volcano queues become a policy, and what cannot be mapped
is said."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from extender.cli import main
from extender.core.policy import parse_policy
from extender.policy_import import import_manifests

DATA = Path(__file__).parent / "data" / "policy-import"


def run(capsys: pytest.CaptureFixture[str], *files: str) -> tuple[int, dict[str, Any], str]:
    code = main(["policy", "import", *files])
    captured = capsys.readouterr()
    return code, yaml.safe_load(captured.out) or {}, captured.err


def test_kueue_cluster_queues_cohorts_and_local_queues_become_a_valid_policy(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = run(capsys, str(DATA / "kueue.yaml"))
    assert code == 0, err
    policy = parse_policy(doc)
    team_a = policy.queues["team-a-cq"]
    assert team_a.parent == "research"
    assert team_a.guarantee["nvidia.com/gpu"] == 12, "nominal quotas of both flavors"
    assert team_a.max == {"nvidia.com/gpu": 24}, "nominal + borrowingLimit"
    assert team_a.namespaces == ("team-a",)
    assert policy.resolve("user-queue", "team-a") == ("team-a-cq", ""), "the LocalQueue label"
    assert policy.resolve("user-queue", "team-b") == ("team-b-cq", "")
    assert policy.queues["team-b-cq"].state == "draining", "stopPolicy HoldAndDrain"
    assert policy.queues["research"].guarantee["nvidia.com/gpu"] == 36, "8 own + 12 + 16"
    for note in (
        "flavors a100, h100 merged",
        "lendingLimit of nvidia.com/gpu not mapped",
        "preemption not mapped",
        "namespaceSelector {} (every namespace) not mapped",
    ):
        assert note in err


def test_volcano_queues_become_a_valid_policy_with_their_tree_weights_and_states(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, doc, err = run(capsys, str(DATA / "volcano.yaml"))
    assert code == 0, err
    policy = parse_policy(doc)
    assert "root" not in policy.queues
    assert policy.queues["ml"].weight == 2
    assert policy.queues["ml-vision"].parent == "ml"
    assert policy.queues["ml-vision"].guarantee == {"nvidia.com/gpu": 16}, "deserved"
    assert policy.queues["ml-vision"].max == {"nvidia.com/gpu": 32}, "capability"
    assert policy.queues["adhoc"].state == "closed"
    assert "guarantee.resource not mapped; deserved is used" in err
    assert policy.rules("ml-vision").reclaimable is False, "Volcano reclaimable: false"


def test_both_sources_at_once_and_unmappable_input_is_reported() -> None:
    documents = [
        *yaml.safe_load_all((DATA / "kueue.yaml").read_text()),
        *yaml.safe_load_all((DATA / "volcano.yaml").read_text()),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}},
        {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "Queue",
            "metadata": {"name": "Odd.Name"},
            "spec": {"capability": {"nvidia.com/gpu": "lots"}},
        },
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
