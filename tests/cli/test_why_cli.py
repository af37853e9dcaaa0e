"""`gangplank why|status|queues` (and `kubectl gangplank …`) against a running extender: one line
naming the queue, the gang, the place in line and what is missing; tables, JSON and YAML."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
import yaml
from flask import Flask
from werkzeug.serving import make_server

from extender.cli.client import render_status
from extender.cli.main import main as gangplank
from extender.core.gangs.hold import Hold
from extender.core.queues.policy_parse import parse_policy
from extender.kube.binder import StoreBinder
from extender.observe.metrics import Metrics
from extender.service.runtime import Runtime
from extender.web.app import create_app
from tests.builders import gang_pods, node, pod, policy_doc, queue
from tests.cluster import Cluster


def waiting_gang_cluster() -> tuple[Cluster, list[dict[str, Any]]]:
    """team-a/train, a gang of 4 x 8 GPUs on two 8-GPU nodes (2 fit), and its members; beside
    it pods that do not wait: a finished gang, a finished single pod, another scheduler's pod."""
    members = gang_pods(
        "train", 4, gpu=8, namespace="team-a", labels={"gangplank.io/queue": "team-a"}
    )
    finished = gang_pods("eval", 2, gpu=0, namespace="team-a", node="n1", phase="Succeeded")
    done = pod("done", namespace="team-a", node="n1", phase="Succeeded")
    dns = pod("dns", namespace="kube-system", node="n1")
    dns["spec"]["schedulerName"] = "default-scheduler"
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=[*members, *finished, done, dns])
    return cluster, members


@contextmanager
def serving(app: Flask) -> Iterator[str]:
    """`app` served on a loopback port, for commands run as people run them."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()


@contextmanager
def waiting_gang_server() -> Iterator[str]:
    cluster, members = waiting_gang_cluster()
    policy = parse_policy(policy_doc(queue("team-a", namespaces=["team-a"])))
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True, policy=policy)
    app = create_app(runtime)
    app.test_client().post("/scheduler/filter", json={"Pod": members[0], "NodeNames": ["n0", "n1"]})
    with serving(app) as base:
        yield base


@pytest.fixture
def url() -> Iterator[str]:
    with waiting_gang_server() as base:
        yield base


def test_why_explains_a_waiting_pod_in_one_line(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gangplank(["--url", url, "why", "team-a/train-0"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("pod team-a/train-0, gang team-a/train (0 of 4 running, 4 exist)")
    assert "queue team-a, 1 of 1 in line" in first
    assert "waiting: gang team-a/train: needs 4 pods of 8 nvidia.com/gpu" in first
    assert "only 2 fit" in first


def test_why_answers_json_and_yaml_and_says_when_a_pod_is_unknown(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gangplank(["--url", url, "-o", "json", "why", "train-1", "-n", "team-a"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["queue"] == "team-a" and answer["gang"]["size"] == 4
    assert gangplank(["--url", url, "-o", "yaml", "why", "team-a/train-1"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["job"] == "gang team-a/train"
    assert gangplank(["--url", url, "why", "team-a/nobody"]) == 1
    assert "pod team-a/nobody is not in gangplank's view of the cluster" in capsys.readouterr().err


def test_status_and_queues_print_tables(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert gangplank(["--url", url, "status"]) == 0
    out = capsys.readouterr().out
    assert "waiting 1;" in out and "gang team-a/train  1" in out
    assert gangplank(["--url", url, "queues"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == [
        "QUEUE",
        "GPUS",
        "USED",
        "GUARANTEE",
        "MAX",
        "BORROWED",
        "WAITING",
        "SHARE",
    ]
    assert "team-a" in out


def test_queues_show_recent_use_and_who_is_behind_with_a_usage_history(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster = Cluster(nodes=[node("n0", gpu=8)])
    for name in ("research", "vision"):
        cluster.add("pods", pod(f"{name}-next", gpu=8, labels={"gangplank.io/queue": name}))
    doc = policy_doc(queue("research"), queue("vision"))
    policy = parse_policy({**doc, "fairness": {"halfLife": "24h"}})
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True, policy=policy)
    now = time.time()
    runtime.scheduler.history.sample(now - 7200.0, {})
    runtime.scheduler.history.sample(now - 3600.0, {"research": {"nvidia.com/gpu": 8}})
    runtime.scheduler.history_known("")
    with serving(create_app(runtime)) as url:
        assert gangplank(["--url", url, "queues"]) == 0
        out = capsys.readouterr().out
        assert gangplank(["--url", url, "why", "default/research-next"]) == 0
        why = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split()[-5:] == ["RECENT", "GPU-H", "SHARE", "NOW", "SHARE"]
    assert lines[1].split()[0] == "vision", "in fair order: the lower share first"
    research = lines[2].split()
    assert research[0] == "research" and 7.0 < float(research[-3]) < 8.0, out  # an hour ago
    assert "SHARE counts recent use, halved every 1d, with current use" in lines[3]
    assert lines[4].startswith("queue research is behind queue vision: 7."), out
    assert lines[4].endswith(
        " GPU-hours used recently (half-life 24h) against 0.0 GPU-hours, weights 1:1"
    )
    assert "  fair order: queue research is behind queue vision: 7." in why


def test_an_unreachable_extender_says_how_to_reach_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert gangplank(["--url", "http://127.0.0.1:9", "status"]) == 1
    assert "port-forward" in capsys.readouterr().err


def test_bad_why_requests_are_400_with_the_reason(url: str) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{url}/why?pod=no-slash")
    assert err.value.code == 400
    assert "namespace/name" in json.loads(err.value.read())["Error"]


def test_why_explains_the_demo_clusters_waiting_pods_in_one_line() -> None:
    from extender.cli.demo import DATA
    from extender.service.settings import Settings
    from extender.web.app import create_app_from_settings

    settings = Settings(
        cluster_file=str(DATA / "demo-cluster.yaml"), policy=str(DATA / "demo-policy.yaml")
    )
    client = create_app_from_settings(settings).test_client()
    for name in ("filter-gang.json", "filter-queue-max.json", "filter-incomplete-gang.json"):
        body = json.loads((DATA / "demo-requests" / name).read_text())
        client.post("/scheduler/filter", json=body)
    sweep = client.get("/why?pod=team-a/sweep-0").get_json()
    assert re.fullmatch(
        r"pod team-a/sweep-0, gang team-a/sweep \(0 of 4 running, 2 exist\), queue team-a, "
        r"\d of \d in line; waiting: gang team-a/sweep: 2 of 4 pods exist",
        sweep["line"],
    )
    held = client.get("/why?pod=team-a/llm-eval").get_json()
    assert re.match(
        r"pod team-a/llm-eval, queue team-a; held by its queue \(max\): queue team-a: "
        r"nvidia.com/gpu \d+ of max 24 in use, pod team-a/llm-eval needs 4",
        held["line"],
    )


def test_why_says_a_finished_pod_finished_and_how_to_list_the_pods_gangplank_holds(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gangplank(["--url", url, "why", "team-a/eval-0"]) == 0
    assert "finished (Succeeded) on n1" in capsys.readouterr().out.splitlines()[0]
    assert gangplank(["--url", url, "why", "team-a/done"]) == 1
    err = capsys.readouterr().err
    assert (
        "pod team-a/done is not in gangplank's view of the cluster: it finished or was deleted"
        in (err)
    )
    assert "`gangplank pods` lists the pods gangplank holds" in err


def test_why_says_another_schedulers_pod_is_not_gangplanks(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gangplank(["--url", url, "why", "kube-system/dns"]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert "running on n1; not gangplank's: its schedulerName default-scheduler" in line


@pytest.mark.parametrize(
    "flags,listed",
    [
        (
            [],
            [
                "team-a/train-0",
                "team-a/train-1",
                "team-a/train-2",
                "team-a/train-3",
                "team-a/eval-0",
                "team-a/eval-1",
            ],
        ),
        (["--waiting"], ["team-a/train-0", "team-a/train-1", "team-a/train-2", "team-a/train-3"]),
        (["--queue", "team-a", "--limit", "2"], ["team-a/train-0", "team-a/train-1"]),
        (["-n", "kube-system"], []),
    ],
    ids=[
        "waiting pods first, then the rest; not another scheduler's pod nor a finished single one",
        "only the waiting ones",
        "one queue, at most two",
        "one namespace",
    ],
)
def test_pods_lists_the_pods_gangplank_holds(
    url: str, capsys: pytest.CaptureFixture[str], flags: list[str], listed: list[str]
) -> None:
    assert gangplank(["--url", url, "-o", "json", "pods", *flags]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert [p["pod"] for p in answer["pods"]] == listed
    assert gangplank(["--url", url, "pods", *flags]) == 0
    out = capsys.readouterr().out
    if listed:
        assert out.splitlines()[0].split() == ["POD", "GANG", "QUEUE", "STATE", "WAITING"]
        first = out.splitlines()[1].split()
        assert first[:4] == [listed[0], "team-a/train", "team-a", "waiting"]
        assert re.fullmatch(r"\d+[smhd]", first[4])
    else:
        assert out == "no pods\n"


def test_pods_says_how_many_more_there_are_and_refuses_an_unknown_queue(
    url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert gangplank(["--url", url, "pods", "--limit", "1"]) == 0
    assert "(5 more: raise --limit, or narrow with --queue, --waiting or -n)" in (
        capsys.readouterr().out
    )
    assert gangplank(["--url", url, "pods", "--queue", "team-z"]) == 1
    assert "queue 'team-z' does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    "query,reason",
    [
        ("limit=-1", "limit='-1'"),
        ("limit=%C2%B2", "limit="),
        ("waiting=maybe", "waiting='maybe'"),
        ("namespace=Not_A_Name", "namespace='Not_A_Name'"),
        ("limit=" + "0" * 5000, "limit='000"),
    ],
    ids=[
        "a negative limit",
        "a limit in superscript digits",
        "waiting neither true nor false",
        "a namespace that cannot be",
        "a limit of 5,000 digits (more than int() takes)",
    ],
)
def test_bad_pods_requests_are_400_with_the_reason(url: str, query: str, reason: str) -> None:
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"{url}/pods?{query}")
    assert err.value.code == 400
    assert reason in json.loads(err.value.read())["Error"]


def test_why_and_status_name_the_hold_by_its_job_not_an_internal_key(
    capsys: pytest.CaptureFixture[str],
) -> None:
    cluster, _ = waiting_gang_cluster()
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True)
    runtime.scheduler.holder._hold = Hold(
        "pod:team-b/solo", time.time() + 60, {}, frozenset(), {}, {}
    )
    with serving(create_app(runtime)) as base:
        assert gangplank(["--url", base, "why", "team-a/train-0"]) == 0
        why = capsys.readouterr().out
        assert gangplank(["--url", base, "status"]) == 0
        status = capsys.readouterr().out
    assert "  hold: freed capacity is kept for pod team-b/solo, first in line (" in why
    assert "hold: freed capacity is kept for pod team-b/solo, first in line (" in status
    assert "pod:" not in why + status and "gangplank:" not in why + status


def test_status_shows_a_plans_members_and_nodes_after_they_are_bound() -> None:
    """Found by watching `make demo`: a plan whose members were all bound showed `members: 0,
    nodes: []` (bound members leave the plan's assignments) until the next filter call tidied
    it, while the plan's Event and `why` named its node."""
    members = gang_pods("pair", 2, gpu=8)
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True)
    client = create_app(runtime).test_client()
    client.post("/scheduler/filter", json={"Pod": members[0], "NodeNames": ["n0", "n1"]})
    plan = runtime.scheduler.reservations.get("gangplank:default/pair")
    assert plan is not None
    placed = dict(plan.assignments)
    (before,) = client.get("/status").get_json()["plans"]
    assert (before["members"], before["bound"], before["nodes"]) == (2, 0, ["n0", "n1"])
    for member in members:
        meta = member["metadata"]
        bind = {
            "PodName": meta["name"],
            "PodNamespace": meta["namespace"],
            "PodUID": meta["uid"],
            "Node": placed[meta["uid"]],
        }
        assert client.post("/scheduler/bind", json=bind).status_code == 200
    (after,) = client.get("/status").get_json()["plans"]
    assert (after["members"], after["bound"], after["nodes"]) == (2, 2, ["n0", "n1"])
    why = client.get("/why?pod=default/pair-0").get_json()
    assert why["state"] == f"running on {placed[members[0]['metadata']['uid']]}"


def keys_of(answer: Any) -> set[str]:
    """Every key of a JSON answer, at any depth."""
    if isinstance(answer, dict):
        return set(answer) | {k for v in answer.values() for k in keys_of(v)}
    if isinstance(answer, list):
        return {k for v in answer for k in keys_of(v)}
    return set()


def test_every_key_of_the_json_api_is_camel_case_as_kubernetes_writes_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`waitingSeconds` beside `seconds_left` before: one convention, Kubernetes' camelCase."""
    cluster, members = waiting_gang_cluster()
    duo = gang_pods("duo", 2, gpu=1, namespace="team-a", labels={"gangplank.io/queue": "team-a"})
    cluster.add("pods", *duo)
    policy = parse_policy(policy_doc(queue("team-a", namespaces=["team-a"])))
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True, policy=policy)
    runtime.scheduler.holder._hold = Hold(
        "pod:team-b/solo", time.time() + 60, {}, frozenset(), {}, {}
    )
    app = create_app(runtime)
    client = app.test_client()
    for first in (members[0], duo[0]):
        client.post("/scheduler/filter", json={"Pod": first, "NodeNames": ["n0", "n1"]})
    answers = {
        path: client.get(path).get_json()
        for path in ("/status", "/why?pod=team-a/train-0", "/pods", "/queues")
    }
    assert answers["/status"]["plans"] and answers["/status"]["hold"], "every part is shown"
    assert {path: sorted(k for k in keys_of(a) if "_" in k) for path, a in answers.items()} == {
        path: [] for path in answers
    }
    with serving(app) as base:  # and the CLI reads the new keys
        assert gangplank(["--url", base, "status"]) == 0
        status = capsys.readouterr().out
        assert gangplank(["--url", base, "why", "team-a/train-0"]) == 0
        why = capsys.readouterr().out
    assert "reserved pods: 2" in status and "waiting gang" in status.lower()
    assert re.search(r"\(\d+ s left\)", status) and re.search(r"\(\d+ s left\)", why)
    assert "(1 of 1 waiting in line)" in why


def test_status_says_a_waiting_gang_not_asked_about_yet_has_no_reason_yet() -> None:
    """Before, its LAST REASON cell was empty (`gangplank serve --cluster-file` of the demo's
    cluster: the periodic pass finds the gang waiting before kube-scheduler sends a member)."""
    status = {
        "gangs": {"waiting": 1},
        "waitingGangs": [{"job": "gang a/t", "reason": "", "parked": 0}],
    }
    assert render_status(status).splitlines()[-1] == (
        "gang a/t      0       no reason recorded yet (kube-scheduler has not asked gangplank "
        "about it)"
    )
