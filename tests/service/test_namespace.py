"""The namespace gangplank runs in is found as Kubernetes' client libraries find theirs, and it
names where the requeue records and the Lease are when their flags name no namespace."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from extender.service.settings import (
    DEFAULT_NAMESPACE,
    REQUEUE_CONFIGMAP,
    find_namespace,
    parse_serve_settings,
)

MANIFESTS = Path(__file__).parents[2] / "manifests/base"


def kubeconfig(path: Path, namespace: str | None) -> Path:
    """A kubeconfig whose current context names `namespace` (None: none)."""
    context: dict[str, str] = {"cluster": "c", "user": "u"}
    if namespace is not None:
        context["namespace"] = namespace
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "ops",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:6443"}}],
                "users": [{"name": "u", "user": {"token": "not-a-secret"}}],
                "contexts": [
                    {"name": "other", "context": {**context, "namespace": "not-current"}},
                    {"name": "ops", "context": context},
                ],
            }
        )
    )
    return path


@pytest.mark.parametrize(
    "pod_namespace,in_file,context_namespace,expected,source",
    [
        ("from-env", "from-file", "from-context", "from-env", "$POD_NAMESPACE"),
        (None, "from-file\n", "from-context", "from-file", "the service account's"),
        (None, None, "from-context", "from-context", "context ops of kubeconfig"),
        (None, None, None, DEFAULT_NAMESPACE, "the default"),
        ("", "", "", DEFAULT_NAMESPACE, "the default"),
        ("Not_A_Namespace", None, "from-context", "from-context", "context ops"),
    ],
    ids=[
        "POD_NAMESPACE comes first",
        "then the service account's namespace file",
        "then the namespace of the kubeconfig's current context",
        "else the namespace the manifests put gangplank in",
        "an empty variable, file or context namespace tells nothing",
        "a variable that is no namespace name is passed over",
    ],
)
def test_the_namespace_is_found_in_the_order_client_libraries_look(
    tmp_path: Path,
    pod_namespace: str | None,
    in_file: str | None,
    context_namespace: str | None,
    expected: str,
    source: str,
) -> None:
    env = {} if pod_namespace is None else {"POD_NAMESPACE": pod_namespace}
    namespace_file = tmp_path / "namespace"
    if in_file is not None:
        namespace_file.write_text(in_file)
    config = kubeconfig(tmp_path / "config", context_namespace)
    found = find_namespace(env, str(config), namespace_file)
    assert found.name == expected
    assert found.source.startswith(source)


def test_a_kubeconfig_that_is_missing_or_broken_names_no_namespace(tmp_path: Path) -> None:
    broken = tmp_path / "broken"
    broken.write_text("{not yaml: [")
    for path in (tmp_path / "missing", broken):
        assert find_namespace({}, str(path), tmp_path / "no-file").name == DEFAULT_NAMESPACE


def test_serve_finds_the_kubeconfig_context_through_kubeconfig_and_its_namespace_names_both(
    tmp_path: Path,
) -> None:
    config = kubeconfig(tmp_path / "config", "ops-ns")
    settings = parse_serve_settings(
        ["--leader-lease", "gangplank-scheduler"], {"KUBECONFIG": str(config)}, tmp_path / "none"
    )
    assert settings.namespace.name == "ops-ns"
    assert settings.requeue_configmap_ref == ("ops-ns", REQUEUE_CONFIGMAP)
    assert settings.leader_lease == "ops-ns/gangplank-scheduler"


def test_in_cluster_the_service_account_names_it_and_no_kubeconfig_is_read(
    tmp_path: Path,
) -> None:
    config = kubeconfig(tmp_path / "config", "ops-ns")
    namespace_file = tmp_path / "namespace"
    namespace_file.write_text("team-a")
    settings = parse_serve_settings(
        ["--in-cluster"], {"KUBECONFIG": str(config), "HOME": str(tmp_path)}, namespace_file
    )
    assert settings.requeue_configmap_ref == ("team-a", REQUEUE_CONFIGMAP)
    no_file = parse_serve_settings(["--in-cluster"], {"KUBECONFIG": str(config)}, tmp_path / "x")
    assert no_file.namespace.name == DEFAULT_NAMESPACE, "the kubeconfig is not a pod's"


def test_without_kubeconfig_the_one_in_home_is_read(tmp_path: Path) -> None:
    (tmp_path / ".kube").mkdir()
    kubeconfig(tmp_path / ".kube/config", "from-home")
    settings = parse_serve_settings([], {"HOME": str(tmp_path)}, tmp_path / "none")
    assert settings.namespace.name == "from-home"


@pytest.mark.parametrize(
    "flags,expected",
    [
        ([], (DEFAULT_NAMESPACE, REQUEUE_CONFIGMAP)),
        (["--requeue-configmap", "gp.requeues"], (DEFAULT_NAMESPACE, "gp.requeues")),
        (["--requeue-configmap", "ops/gp.requeues"], ("ops", "gp.requeues")),
    ],
    ids=[
        "by default gangplank-requeues in gangplank's namespace",
        "a name alone is in gangplank's namespace",
        "a namespace given is kept",
    ],
)
def test_the_requeue_configmap_is_in_gangplanks_namespace_unless_named(
    tmp_path: Path, flags: list[str], expected: tuple[str, str]
) -> None:
    assert parse_serve_settings(flags, {}, tmp_path / "none").requeue_configmap_ref == expected


def test_the_packaged_manifests_put_gangplank_in_the_default_namespace() -> None:
    """Run outside a pod, with nothing to tell it, gangplank looks where the manifests put it
    and where their Roles let it read its ConfigMap and the Lease."""
    docs = [
        doc
        for path in sorted(MANIFESTS.glob("*.yaml"))
        if path.name != "kustomization.yaml"
        for doc in yaml.safe_load_all(path.read_text())
        if doc
    ]
    namespaces = {d["metadata"]["name"] for d in docs if d["kind"] == "Namespace"}
    roles = {d["metadata"]["name"]: d["metadata"]["namespace"] for d in docs if d["kind"] == "Role"}
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    assert namespaces == {DEFAULT_NAMESPACE}
    assert deployment["metadata"]["namespace"] == DEFAULT_NAMESPACE
    assert roles["gangplank-extender-requeues"] == DEFAULT_NAMESPACE
    assert roles["gangplank-extender-leader-lease"] == DEFAULT_NAMESPACE
