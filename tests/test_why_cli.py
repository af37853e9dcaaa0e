"""`gangplank why|status|queues` (and `kubectl gangplank …`) against a running extender: one line
naming the queue, the gang, the place in line and what is missing; tables, JSON and YAML."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator

import pytest
import yaml
from werkzeug.serving import make_server

from extender.binder import StoreBinder
from extender.cli import main as gangplank
from extender.core.policy import parse_policy
from extender.metrics import Metrics
from extender.runtime import Runtime
from extender.web.app import create_app
from tests.builders import gang_pods, node, policy_doc, queue
from tests.cluster import Cluster


@pytest.fixture
def url() -> Iterator[str]:
    members = gang_pods(
        "train", 4, gpu=8, namespace="team-a", labels={"gangplank.io/queue": "team-a"}
    )
    cluster = Cluster(nodes=[node("n0"), node("n1")], pods=members)
    policy = parse_policy(policy_doc(queue("team-a", namespaces=["team-a"])))
    runtime = Runtime(cluster.store, StoreBinder(), Metrics(), preloaded=True, policy=policy)
    app = create_app(runtime)
    app.test_client().post("/scheduler/filter", json={"Pod": members[0], "NodeNames": ["n0", "n1"]})
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


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
    assert "pod team-a/nobody is not in gangplank's cache" in capsys.readouterr().err


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
    from extender.demo import DATA
    from extender.settings import Settings
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
