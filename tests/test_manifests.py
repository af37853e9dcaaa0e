"""The manifests are valid Kubernetes objects and the scheduler configuration is one kube-scheduler
accepts and that reaches gangplank's routes."""

from __future__ import annotations

import copy
import re
import shutil
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from extender.cache.handlers import POD_GROUP_KINDS
from extender.cache.handlers import WORKLOAD_KINDS as WATCHED_WORKLOADS
from extender.core.lifecycle.workloads import KINDS as WORKLOAD_KINDS
from extender.kube.requeue_store import VERBS as REQUEUE_VERBS
from extender.service.settings import parse_serve_settings
from extender.web.verbs import VERBS
from tests.scheduler_config import validate_scheduler_config
from tests.serving import Served, free_port

ROOT = Path(__file__).parent.parent
MANIFESTS = ROOT / "manifests"
BASE = MANIFESTS / "base"
PRODUCTION = MANIFESTS / "overlays" / "production"
K8S_VERSION = "1.36.0"
# Custom resources, which kubernetes-validate has no schema for: checked by hand below (the
# PrometheusRule by tests/observe/test_alerts.py)
CRD_GROUPS = ("monitoring.coreos.com/",)

Obj = dict[str, Any]

# What `kubectl kustomize` does with the kustomizations here, done in the test so that it needs
# no kustomize binary; `test_the_renderer_agrees_with_kubectl_kustomize` compares the two where
# kubectl is installed. A field it does not apply is refused, not ignored.
RENDERED_FIELDS = {"apiVersion", "kind", "namespace", "resources", "labels", "images", "patches"}
CLUSTER_SCOPED = {"Namespace", "ClusterRole", "ClusterRoleBinding", "PriorityClass"}
# Strategic merge: lists of these fields merge item by item on the key; other lists are replaced.
MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "env": "name",
    "volumeMounts": "mountPath",
    "ports": "containerPort",
    "topologySpreadConstraints": "topologyKey",
}


def load_yaml(path: Path) -> list[Obj]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def render(directory: Path) -> list[Obj]:
    """The objects `kubectl kustomize directory` prints (in file order, not kustomize's)."""
    spec: Obj = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - RENDERED_FIELDS
    assert not unknown, f"{directory}: the test's renderer does not apply {sorted(unknown)}"
    objects: list[Obj] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        objects += render(path) if path.is_dir() else load_yaml(path)
    for patch in spec.get("patches", []):
        assert set(patch) == {"path"}, f"{directory}: only `path:` strategic-merge patches"
        for change in load_yaml(directory / patch["path"]):
            (target,) = (o for o in objects if identity(o) == identity(change))
            objects[objects.index(target)] = merge(target, change)
    if "namespace" in spec:
        for obj in objects:
            if obj["kind"] not in CLUSTER_SCOPED:
                obj["metadata"]["namespace"] = spec["namespace"]
    for labels in spec.get("labels", []):
        assert set(labels) == {"pairs"}, f"{directory}: labels on metadata only"
        for obj in objects:
            obj["metadata"]["labels"] = {**obj["metadata"].get("labels", {}), **labels["pairs"]}
    for image in spec.get("images", []):
        for container in (c for o in objects for c in pod_containers(o)):
            name, _, tag = container["image"].partition(":")
            if name == image["name"]:
                new_tag = image.get("newTag", tag)
                container["image"] = image.get("newName", name) + (f":{new_tag}" if new_tag else "")
    return objects


def identity(obj: Obj) -> tuple[str, str, str]:
    return obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"]


def merge(base: Any, patch: Any, field: str = "") -> Any:
    """A strategic-merge patch of the shapes the overlays use: maps merge (null deletes), lists of
    MERGE_KEYS merge by their key (new items appended), anything else is replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        assert not any(k.startswith("$") for k in patch), f"{field}: no patch directives"
        merged = dict(base)
        for key, value in patch.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = merge(base[key], value, key) if key in base else value
        return merged
    if isinstance(base, list) and isinstance(patch, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        assert all(key in item for item in base + patch), f"{field}: items merge on {key}"
        merged_list = list(base)
        for item in patch:
            same = [i for i, old in enumerate(merged_list) if old[key] == item[key]]
            if same:
                merged_list[same[0]] = merge(merged_list[same[0]], item, field)
            else:
                merged_list.append(item)
        return merged_list
    return patch


def pod_containers(obj: Obj) -> list[Obj]:
    spec = obj.get("spec", {}).get("template", {}).get("spec", {})
    return [*spec.get("containers", []), *spec.get("initContainers", [])]


def kustomization(directory: Path = BASE) -> Obj:
    loaded: Obj = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return loaded


def objects() -> list[Obj]:
    """What `kubectl apply -k manifests/` applies."""
    return render(MANIFESTS)


def production() -> list[Obj]:
    """What `kubectl apply -k manifests/overlays/production/` applies."""
    return render(PRODUCTION)


VARIANTS = {"base": objects, "production": production}


def find(kind: str, name: str, among: list[Obj] | None = None) -> Obj:
    return next(
        o
        for o in (objects() if among is None else among)
        if o["kind"] == kind and o["metadata"]["name"] == name
    )


def scheduler_config() -> dict[str, Any]:
    data = find("ConfigMap", "gangplank-scheduler-config")["data"]
    loaded: dict[str, Any] = yaml.safe_load(data["scheduler-config.yaml"])
    return loaded


def containers(among: list[Obj] | None = None) -> dict[str, Obj]:
    spec = find("Deployment", "gangplank", among)["spec"]["template"]["spec"]
    return {c["name"]: c for c in spec["containers"]}


@pytest.mark.parametrize("directory", [BASE, PRODUCTION], ids=["base", "production overlay"])
def test_the_kustomization_lists_every_manifest_beside_it_and_only_existing_files(
    directory: Path,
) -> None:
    spec = kustomization(directory)
    listed = {r for r in spec["resources"] if not r.startswith("..")}
    listed |= {patch["path"] for patch in spec.get("patches", [])}
    on_disk = {p.name for p in directory.glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk


KUSTOMIZATIONS = sorted(p.parent for p in MANIFESTS.rglob("kustomization.yaml"))


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl to compare the renderer")
@pytest.mark.parametrize("directory", KUSTOMIZATIONS, ids=lambda d: str(d.relative_to(ROOT)))
def test_the_renderer_agrees_with_kubectl_kustomize(directory: Path) -> None:
    done = subprocess.run(
        ["kubectl", "kustomize", str(directory)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    theirs = [canonical(d) for d in yaml.safe_load_all(done.stdout) if d]
    ours = [canonical(o) for o in render(directory)]
    assert sorted(ours, key=identity) == sorted(theirs, key=identity)


def canonical(value: Any, field: str = "") -> Any:
    """`value` with the lists merged by key sorted by it: kustomize appends a patch's new
    containers but puts its new volumes first, and neither order means anything."""
    if isinstance(value, dict):
        return {k: canonical(v, k) for k, v in value.items()}
    if isinstance(value, list) and field in MERGE_KEYS:
        key = MERGE_KEYS[field]
        items = [canonical(v) for v in value]
        return sorted(items, key=lambda v: str(v[key])) if all(key in v for v in items) else items
    return value


def test_every_object_stays_in_the_namespace_its_file_names() -> None:
    """kube-scheduler's authentication reader is bound in kube-system, where its Role lives: a
    kustomization `namespace:` would move the binding into gangplank, naming a Role not there."""
    declared = {
        (o["kind"], o["metadata"]["name"]): o["metadata"].get("namespace")
        for name in kustomization()["resources"]
        for o in load_yaml(BASE / name)
    }
    assert {
        (o["kind"], o["metadata"]["name"]): o["metadata"].get("namespace") for o in objects()
    } == declared
    reader = find("RoleBinding", "gangplank-scheduler-authentication-reader")
    assert reader["metadata"]["namespace"] == "kube-system"


@pytest.mark.parametrize(
    "obj",
    [
        pytest.param(o, id=f"{variant}: {o['kind']} {o['metadata']['name']}")
        for variant, rendered in VARIANTS.items()
        for o in rendered()
        if not o["apiVersion"].startswith(CRD_GROUPS)
    ],
)
def test_every_object_is_valid_against_the_kubernetes_schema(obj: Obj) -> None:
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


@pytest.mark.parametrize("variant", VARIANTS)
def test_containers_run_non_root_read_only_with_requests_and_probes(variant: str) -> None:
    rendered = VARIANTS[variant]()
    pod_spec = find("Deployment", "gangplank", rendered)["spec"]["template"]["spec"]
    assert pod_spec["securityContext"]["runAsNonRoot"] is True
    for container in containers(rendered).values():
        security = container["securityContext"]
        assert security["readOnlyRootFilesystem"] is True
        assert security["allowPrivilegeEscalation"] is False
        assert security["capabilities"]["drop"] == ["ALL"]
        assert container["resources"]["requests"]["cpu"]
        assert container["resources"]["requests"]["memory"]
    gangplank = containers(rendered)["gangplank"]
    assert gangplank["livenessProbe"]["exec"]["command"][-1] == "healthz"
    assert gangplank["readinessProbe"]["exec"]["command"][-1] == "readyz"


# The classes the API server makes; outside kube-system, a ResourceQuota admission configuration
# (as managed clusters have) refuses their pods unless a quota of the namespace allows them.
SYSTEM_PRIORITY = 2_000_000_000
HIGHEST_USER_PRIORITY = 1_000_000_000  # the most a class not the system's may have


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_schedulers_pods_have_a_priority_class_of_their_own_below_the_systems(
    variant: str,
) -> None:
    rendered = VARIANTS[variant]()
    deployment = find("Deployment", "gangplank", rendered)
    name = deployment["spec"]["template"]["spec"]["priorityClassName"]
    assert not name.startswith("system-"), "refused outside kube-system on managed clusters"
    shipped = find("PriorityClass", name, rendered)
    assert 0 < shipped["value"] <= HIGHEST_USER_PRIORITY < SYSTEM_PRIORITY
    assert shipped["globalDefault"] is False, "no other pod takes it by default"


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
        *((group, plural) for group, _, plural in WATCHED_WORKLOADS.values()),
    }
    needed = {(g, r, v) for g, r in watched for v in ("list", "watch")}
    needed |= {("", "pods/binding", "create"), ("", "pods", "patch")}
    needed |= {("", "pods/eviction", "create"), ("", "events", "create")}
    # the lifecycle rules suspend and resume workloads of these kinds (a merge patch each), and
    # read one before resuming it (only what gangplank suspended is resumed)
    needed |= {
        (version.rpartition("/")[0], kind.plural, verb)
        for kind in WORKLOAD_KINDS.values()
        for version in kind.api_versions
        for verb in ("get", "patch")
    }
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
    requeues = find("Role", "gangplank-extender-requeues")
    deployment = find("Deployment", "gangplank")
    namespace = deployment["metadata"]["namespace"]
    env = {e["name"]: e for e in containers()["gangplank"]["env"]}
    assert env["POD_NAMESPACE"]["valueFrom"]["fieldRef"]["fieldPath"] == "metadata.namespace"
    args = containers()["gangplank"]["args"]
    settings = parse_serve_settings(args[1:], {"POD_NAMESPACE": namespace})
    where = settings.requeue_configmap_ref
    history = settings.usage_history_configmap_ref
    assert requeues["metadata"]["namespace"] == where[0] == history[0] == namespace
    # By name wherever Kubernetes allows it; create cannot be (the object is not there yet).
    assert requeues["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["configmaps"],
            "resourceNames": [where[1], history[1]],
            "verbs": [v for v in REQUEUE_VERBS if v != "create"],
        },
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create"]},
    ]
    binding = find("RoleBinding", "gangplank-extender-requeues")
    assert binding["roleRef"]["name"] == "gangplank-extender-requeues"
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "gangplank", "namespace": namespace}
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


def pod_labels(among: list[Obj]) -> dict[str, str]:
    labels: dict[str, str] = find("Deployment", "gangplank", among)["spec"]["template"]["metadata"][
        "labels"
    ]
    return labels


def selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and selector.items() <= labels.items()


def test_the_production_overlay_changes_nothing_of_the_base_but_the_deployment() -> None:
    """RBAC, the scheduler's configuration and the namespace are the base's; the Deployment keeps
    the base's containers' commands, arguments and probes."""
    base, prod = objects(), production()
    for obj in base:
        if obj["kind"] != "Deployment":
            assert find(obj["kind"], obj["metadata"]["name"], prod) == obj
    for name, container in containers(base).items():
        sized = containers(prod)[name]
        assert {**sized, "resources": container["resources"]} == container
    assert find("Deployment", "gangplank", prod)["spec"]["replicas"] == 2


def test_a_drain_keeps_one_of_the_two_replicas_scheduling() -> None:
    prod = production()
    budget = find("PodDisruptionBudget", "gangplank", prod)
    assert budget["apiVersion"] == "policy/v1"
    assert budget["spec"]["minAvailable"] == 1
    assert find("Deployment", "gangplank", prod)["spec"]["replicas"] > 1
    assert selects(budget["spec"]["selector"]["matchLabels"], pod_labels(prod))


def test_the_two_replicas_never_share_a_node_and_spread_over_zones_where_there_are_some() -> None:
    prod = production()
    spec = find("Deployment", "gangplank", prod)["spec"]["template"]["spec"]
    spread = {c["topologyKey"]: c for c in spec["topologySpreadConstraints"]}
    assert spread["kubernetes.io/hostname"]["whenUnsatisfiable"] == "DoNotSchedule"
    assert spread["topology.kubernetes.io/zone"]["whenUnsatisfiable"] == "ScheduleAnyway"
    for constraint in spread.values():
        assert constraint["maxSkew"] == 1
        assert selects(constraint["labelSelector"]["matchLabels"], pod_labels(prod))
        assert constraint["matchLabelKeys"] == ["pod-template-hash"]


def test_every_production_container_has_its_memory_limited_to_its_request_and_no_cpu_limit() -> (
    None
):
    for name, container in containers(production()).items():
        resources = container["resources"]
        assert resources["limits"]["memory"] == resources["requests"]["memory"], name
        assert "cpu" not in resources["limits"], f"{name}: a CPU limit throttles mid-call"
    assert containers(production())["gangplank"]["resources"]["requests"]["cpu"] == "1"


def metrics_proxy_config() -> str:
    config: str = find("ConfigMap", "gangplank-metrics-proxy", production())["data"]["nginx.conf"]
    return config


def test_the_service_monitor_scrapes_the_port_the_metrics_proxy_serves() -> None:
    prod = production()
    monitor = find("ServiceMonitor", "gangplank", prod)
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    services = [
        s
        for s in prod
        if s["kind"] == "Service"
        and selects(monitor["spec"]["selector"]["matchLabels"], s["metadata"]["labels"])
    ]
    (service,) = services
    assert service["metadata"]["namespace"] in monitor["spec"]["namespaceSelector"]["matchNames"]
    assert selects(service["spec"]["selector"], pod_labels(prod))
    service_ports = {p["name"]: p for p in service["spec"]["ports"]}
    container_ports = {
        port["name"]: (container["name"], port["containerPort"])
        for container in containers(prod).values()
        for port in container.get("ports", [])
    }
    for endpoint in monitor["spec"]["endpoints"]:
        assert endpoint["path"] == "/metrics"
        port = service_ports[endpoint["port"]]
        assert container_ports[port["targetPort"]] == ("metrics-proxy", 18889)
    assert re.search(r"^\s*listen 18889;", metrics_proxy_config(), re.M)
    # selected by the same Prometheus as the alerts
    rule = find("PrometheusRule", "gangplank", prod)
    assert monitor["metadata"]["labels"]["release"] == rule["metadata"]["labels"]["release"]


def test_the_metrics_proxy_forwards_only_get_metrics_to_gangplanks_loopback_listener() -> None:
    config = metrics_proxy_config()
    bind = next(a for a in containers(production())["gangplank"]["args"] if a.startswith("--bind="))
    locations = re.findall(r"location (= )?(\S+) \{", config)
    assert locations == [("= ", "/metrics"), ("", "/")]
    assert re.findall(r"proxy_pass ([^;\s]+);", config) == [f"http://{bind.split('=', 1)[1]}"]
    assert "limit_except GET" in config
    assert re.search(r"location / \{\s*return 404;", config)


def test_the_production_overlay_carries_the_alerts_and_the_grafana_dashboard() -> None:
    prod = production()
    assert find("PrometheusRule", "gangplank", prod)["spec"]["groups"]
    dashboard = find("ConfigMap", "gangplank-dashboard", prod)
    assert dashboard["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert dashboard["metadata"]["namespace"] == "gangplank"


def http(method: str, url: str) -> tuple[int, str]:
    request = urllib.request.Request(url, method=method, data=b"{}" if method == "POST" else None)
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


NGINX = shutil.which("nginx")


@pytest.mark.skipif(NGINX is None, reason="nginx not installed (Debian package nginx)")
def test_the_metrics_proxy_serves_gangplanks_metrics_and_none_of_its_verbs(tmp_path: Path) -> None:
    """The ConfigMap's nginx.conf run by the container's own command, against a live gangplank
    (its port, the proxy's port and its scratch directory moved to free ones)."""
    gangplank_port, proxy_port = free_port(), free_port()
    config = (
        metrics_proxy_config()
        .replace("/tmp/", f"{tmp_path}/")
        .replace("listen 18889;", f"listen 127.0.0.1:{proxy_port};")
        .replace("127.0.0.1:18888", f"127.0.0.1:{gangplank_port}")
    )
    config_file = tmp_path / "nginx.conf"
    config_file.write_text(config)
    command = containers(production())["metrics-proxy"]["command"]
    command[command.index("-c") + 1] = str(config_file)
    demo = ROOT / "extender" / "data" / "demo-cluster.yaml"
    proxy = f"http://127.0.0.1:{proxy_port}"
    with Served("--cluster-file", str(demo), port=gangplank_port) as served:
        nginx = subprocess.Popen(
            [str(NGINX), *command[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT
        )
        try:
            deadline = time.monotonic() + 10
            while nginx.poll() is None and time.monotonic() < deadline:
                try:
                    http("GET", f"{proxy}/")
                    break
                except OSError:
                    time.sleep(0.1)
            assert nginx.poll() is None, nginx.stdout.read().decode() if nginx.stdout else ""
            status, body = http("GET", f"{proxy}/metrics")
            assert status == 200 and "gangplank_leader" in body
            assert http("GET", f"{served.base}/healthz")[0] == 200
            assert http("GET", f"{proxy}/healthz")[0] == 404
            assert http("POST", f"{proxy}/scheduler/bind")[0] == 404
            assert http("POST", f"{proxy}/metrics")[0] == 403
        finally:
            nginx.terminate()
            nginx.wait(timeout=10)


def test_the_documented_kubernetes_version_is_the_scheduler_images_and_the_schemas() -> None:
    image = containers()["kube-scheduler"]["image"]
    scheduler = re.fullmatch(r"registry\.k8s\.io/kube-scheduler:v(\d+\.\d+)\.\d+", image)
    documented = re.search(
        r"^\| Kubernetes \(API server\) \| \*\*(\d+\.\d+)\*\* \|",
        (ROOT / "docs" / "deploy.md").read_text(),
        re.M,
    )
    assert scheduler and documented
    assert scheduler[1] == documented[1] == K8S_VERSION.rsplit(".", 1)[0]
