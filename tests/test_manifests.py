"""The manifests are valid Kubernetes objects and the scheduler configuration is one kube-scheduler
accepts and that reaches gangplank's routes."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from extender.cache.handlers import POD_GROUP_KINDS
from extender.web.verbs import VERBS
from tests.scheduler_config import validate_scheduler_config

ROOT = Path(__file__).parent.parent
MANIFESTS = ROOT / "manifests"
K8S_VERSION = "1.36.0"


def kustomization() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((MANIFESTS / "kustomization.yaml").read_text())
    return loaded


def objects() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for name in kustomization()["resources"]:
        out += [d for d in yaml.safe_load_all((MANIFESTS / name).read_text()) if d]
    return out


def find(kind: str, name: str) -> dict[str, Any]:
    return next(o for o in objects() if o["kind"] == kind and o["metadata"]["name"] == name)


def scheduler_config() -> dict[str, Any]:
    data = find("ConfigMap", "gangplank-scheduler-config")["data"]
    loaded: dict[str, Any] = yaml.safe_load(data["scheduler-config.yaml"])
    return loaded


def containers() -> dict[str, dict[str, Any]]:
    spec = find("Deployment", "gangplank")["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


def test_the_kustomization_lists_every_manifest_and_only_existing_files() -> None:
    listed = set(kustomization()["resources"])
    on_disk = {p.name for p in MANIFESTS.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


@pytest.mark.parametrize("obj", objects(), ids=lambda o: f"{o['kind']} {o['metadata']['name']}")
def test_every_object_is_valid_against_the_kubernetes_schema(obj: dict[str, Any]) -> None:
    kubernetes_validate.validate(obj, K8S_VERSION, strict=True)


def test_the_schema_check_does_catch_a_broken_object() -> None:
    broken = copy.deepcopy(find("Deployment", "gangplank"))
    broken["spec"]["replicas"] = "two"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, K8S_VERSION, strict=True)


def test_the_scheduler_configuration_passes_kube_schedulers_validation() -> None:
    assert validate_scheduler_config(scheduler_config(), set(VERBS)) == []


def test_the_gangplank_profile_turns_off_the_scores_that_spread_pods_and_weighs_gangplank_10() -> (
    None
):
    config = scheduler_config()
    profile = next(p for p in config["profiles"] if p["schedulerName"] == "gangplank")
    disabled = {e["name"] for e in profile["plugins"]["score"]["disabled"]}
    assert disabled == {"NodeResourcesFit", "NodeResourcesBalancedAllocation", "PodTopologySpread"}
    assert config["extenders"][0]["weight"] == 10
    broken = copy.deepcopy(config)
    broken["profiles"][0]["plugins"]["score"]["disabled"].append({"name": "LeastAllocated"})
    assert any("no score plugin" in e for e in validate_scheduler_config(broken, set(VERBS)))


@pytest.mark.parametrize(
    "change,error",
    [
        (lambda c: c["extenders"].append(dict(c["extenders"][0])), "only one can"),
        (lambda c: c["extenders"][0].update(weight=0), "positive weight"),
        (lambda c: c["extenders"][0].update(filterVerb="predicates"), "not a route"),
        (lambda c: c.update(percentageOfNodesToScore=150), "not in valid range"),
        (
            lambda c: c["extenders"][0].update(managedResources=[{"name": "gpu"}]),
            "extended resource",
        ),
        (lambda c: c["leaderElection"].update(resourceLock="endpoints"), "leases"),
    ],
    ids=[
        "two binders are refused",
        "prioritize with weight 0 is refused",
        "a verb that is not a route is refused",
        "a percentage over 100 is refused",
        "a managed resource that is not an extended resource is refused",
        "a lock other than leases is refused",
    ],
)
def test_the_validation_refuses_what_kube_scheduler_refuses(change: Any, error: str) -> None:
    config = scheduler_config()
    change(config)
    assert any(error in e for e in validate_scheduler_config(config, set(VERBS)))


def test_the_gangplank_profile_scores_every_node_and_calls_every_verb_on_loopback() -> None:
    config = scheduler_config()
    assert [p["schedulerName"] for p in config["profiles"]] == ["gangplank"]
    assert config["percentageOfNodesToScore"] == 100
    assert config["profiles"][0]["percentageOfNodesToScore"] == 100
    (extender,) = config["extenders"]
    assert extender["nodeCacheCapable"] is True
    assert [extender[f"{v}Verb"] for v in VERBS] == list(VERBS)
    args = containers()["gangplank"]["args"]
    bind = next(a.split("=", 1)[1] for a in args if a.startswith("--bind="))
    prefix = next(a.split("=", 1)[1] for a in args if a.startswith("--url-prefix="))
    assert bind.startswith("127.0.0.1:")
    assert extender["urlPrefix"] == f"http://{bind}{prefix}"
    for resource in extender.get("managedResources") or []:
        assert not (resource["name"] == "nvidia.com/gpu" and resource.get("ignoredByScheduler"))


def test_the_scheduler_reads_the_mounted_configuration_and_elects_a_leader() -> None:
    scheduler = containers()["kube-scheduler"]
    flag = next(a for a in scheduler["command"] if a.startswith("--config="))
    path = Path(flag.split("=", 1)[1])
    mount = next(m for m in scheduler["volumeMounts"] if m["name"] == "scheduler-config")
    assert str(path.parent) == mount["mountPath"] and path.name == "scheduler-config.yaml"
    assert scheduler_config()["leaderElection"]["leaderElect"] is True
    assert find("Deployment", "gangplank")["spec"]["replicas"] == 2


def test_containers_run_non_root_read_only_with_requests_and_probes() -> None:
    pod_spec = find("Deployment", "gangplank")["spec"]["template"]["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    for container in containers().values():
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert container["resources"]["requests"]["cpu"]
        assert container["resources"]["requests"]["memory"]
    gangplank = containers()["gangplank"]
    assert gangplank["livenessProbe"]["exec"]["command"][-1] == "healthz"
    assert gangplank["readinessProbe"]["exec"]["command"][-1] == "readyz"


def test_the_extender_may_do_exactly_what_the_code_does() -> None:
    rules = find("ClusterRole", "gangplank-extender")["rules"]
    granted = {
        (g, r, v)
        for rule in rules
        for g in rule["apiGroups"]
        for r in rule["resources"]
        for v in rule["verbs"]
    }
    watched = {
        ("", "nodes"),
        ("", "pods"),
        ("", "namespaces"),
        ("scheduling.k8s.io", "priorityclasses"),
        ("batch", "jobs"),
        *((group, plural) for _, group, _, plural in POD_GROUP_KINDS.values()),
    }
    needed = {(g, r, v) for g, r in watched for v in ("list", "watch")}
    needed |= {("", "pods/binding", "create"), ("", "pods", "patch")}
    needed |= {("", "pods/eviction", "create"), ("", "events", "create")}
    assert granted == needed
    lease = find("Role", "gangplank-extender-leader-lease")["rules"]
    assert lease == [
        {
            "apiGroups": ["coordination.k8s.io"],
            "resources": ["leases"],
            "resourceNames": ["gangplank-scheduler"],
            "verbs": ["get"],
        }
    ]
    election = scheduler_config()["leaderElection"]
    lease_name = f"{election['resourceNamespace']}/{election['resourceName']}"
    assert f"--leader-lease={lease_name}" in containers()["gangplank"]["args"]
    for obj in objects():
        for rule in obj.get("rules", []):
            assert "*" not in rule["verbs"] + rule["resources"], "no wildcards"
            assert "secrets" not in rule["resources"]


def test_the_dockerfile_runs_gangplank_as_non_root() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert re.search(r"^USER 65532", dockerfile, re.M)
    assert 'ENTRYPOINT ["gangplank"]' in dockerfile
