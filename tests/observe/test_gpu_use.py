"""Reading GPU use from Prometheus (`observe/gpu_use.py`), against a stub of its HTTP API: what is
asked, how the answer is read, and that every failure is an answer that says why, never an
exception. A real Prometheus scraping a dcgm-exporter stand-in: test_gpu_use_live.py."""

from __future__ import annotations

import json
import math
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from prometheus_client import generate_latest

from extender.core.model.gpu_use import GpuUse
from extender.observe.gpu_use import GpuUseReader, check_names
from extender.observe.metrics import Metrics
from loadtest.live import free_port


class StubPrometheus:
    """Answers every request with `status` and `body`, after `delay` seconds; keeps the paths and
    query parameters asked."""

    def __init__(self) -> None:
        self.status = 200
        self.body: bytes = b""
        self.delay = 0.0
        self.asked: list[tuple[str, dict[str, str]]] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path, _, query = self.path.partition("?")
                stub.asked.append((path, dict(urllib.parse.parse_qsl(query))))
                time.sleep(stub.delay)
                self.send_response(stub.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(stub.body)))
                self.end_headers()
                self.wfile.write(stub.body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, result: object, status: int = 200, result_type: str = "vector") -> None:
        self.status = status
        self.body = json.dumps(
            {"status": "success", "data": {"resultType": result_type, "result": result}}
        ).encode()


@pytest.fixture
def prometheus() -> Iterator[StubPrometheus]:
    stub = StubPrometheus()
    thread = threading.Thread(target=stub.server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield stub
    stub.server.shutdown()
    stub.server.server_close()


def sample(namespace: str, pod: str, value: str) -> dict[str, object]:
    return {"metric": {"namespace": namespace, "pod": pod}, "value": [1700000000.0, value]}


def test_one_instant_query_at_now_gives_each_pods_busiest_gpu_over_the_window(
    prometheus: StubPrometheus,
) -> None:
    prometheus.answer([sample("ml", "train-0", "3"), sample("ml", "train-1", "87.5")])
    use = GpuUseReader(prometheus.url + "/").read(1800.0, now=1700000000.25)
    assert use == GpuUse({("ml", "train-0"): 3.0, ("ml", "train-1"): 87.5}, window=1800.0)
    ((path, params),) = prometheus.asked
    assert path == "/api/v1/query" and params["time"] == "1700000000.250"
    assert params["query"] == GpuUseReader(prometheus.url).query(1800.0)


def test_the_query_takes_each_pods_max_and_checks_coverage_from_the_window_start_to_now() -> None:
    query = GpuUseReader("http://p:9090").query(1800.0)
    assert query == (
        'max by (namespace,pod) (max_over_time(DCGM_FI_DEV_GPU_UTIL{namespace!="",pod!=""}'
        "[1800000ms]))"
        ' and on (namespace,pod) count by (namespace,pod) (DCGM_FI_DEV_GPU_UTIL{namespace!="",'
        'pod!=""} offset 1800000ms)'
        " and on (namespace,pod) (count_over_time((count by (namespace,pod) "
        '(DCGM_FI_DEV_GPU_UTIL{namespace!="",pod!=""}))[1800000ms:30000ms])'
        " >= scalar(count_over_time(vector(1)[1800000ms:30000ms])))"
    )


def test_the_metric_and_labels_are_the_ones_configured_and_a_path_prefix_is_kept(
    prometheus: StubPrometheus,
) -> None:
    prometheus.answer(
        [{"metric": {"exported_namespace": "ml", "exported_pod": "a"}, "value": [0, "4"]}]
    )
    reader = GpuUseReader(
        prometheus.url + "/prometheus",
        metric="nvidia_gpu_utilization",
        namespace_label="exported_namespace",
        pod_label="exported_pod",
    )
    assert reader.read(60, now=0).busiest == {("ml", "a"): 4.0}
    ((path, params),) = prometheus.asked
    assert path == "/prometheus/api/v1/query"
    assert 'max_over_time(nvidia_gpu_utilization{exported_namespace!=""' in params["query"]
    assert "by (exported_namespace,exported_pod)" in params["query"]


def test_a_value_that_is_not_a_number_is_no_data(prometheus: StubPrometheus) -> None:
    prometheus.answer([sample("ml", "a", "NaN"), sample("ml", "b", "+Inf"), sample("ml", "c", "0")])
    assert GpuUseReader(prometheus.url).read(60, now=0).busiest == {("ml", "c"): 0.0}


def test_names_that_cannot_go_into_promql_are_refused() -> None:
    assert check_names("DCGM_FI_DEV_GPU_UTIL", "namespace", "pod") == ""
    assert "metric name" in check_names("dcgm util", "namespace", "pod")
    assert "label name" in check_names("m", "__name__", "pod")
    assert "label name" in check_names("m", "namespace", 'pod"}')
    with pytest.raises(ValueError, match="pod label"):
        GpuUseReader("http://p:9090", pod_label="9pod")


@pytest.mark.parametrize(
    "status,body,problem",
    [
        (
            400,
            b'{"status":"error","errorType":"bad_data","error":"parse error"}',
            "HTTP 400: bad_data: parse error",
        ),
        (502, b"<html>Bad Gateway</html>", "HTTP 502: Bad Gateway"),
        (200, b"<html>a login page</html>", "answer is not JSON: b'<html>a login page"),
        (
            200,
            b'{"status":"error","errorType":"timeout","error":"query timed out"}',
            "query failed: timeout: query timed out",
        ),
        (200, b'{"status":"success","data":{"resultType":"matrix","result":[]}}', "instant vector"),
        (200, b"[1, 2]", "not a Prometheus API response"),
        (
            200,
            b'{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}',
            "unexpected sample",
        ),
    ],
    ids=[
        "a query Prometheus refuses",
        "a proxy's error page",
        "a body that is not JSON",
        "a query that failed",
        "a range answer",
        "JSON of another shape",
        "a sample without the pod's labels",
    ],
)
def test_a_bad_answer_is_no_data_with_the_reason(
    prometheus: StubPrometheus, status: int, body: bytes, problem: str
) -> None:
    prometheus.status, prometheus.body = status, body
    use = GpuUseReader(prometheus.url).read(60, now=0)
    assert (use.ok, use.busiest, use.window) == (False, {}, 60)
    assert use.problem.startswith(f"prometheus {prometheus.url}: ") and problem in use.problem


def test_a_prometheus_not_there_or_too_slow_is_no_data_with_the_reason(
    prometheus: StubPrometheus,
) -> None:
    gone = GpuUseReader(f"http://127.0.0.1:{free_port()}").read(60, now=0)
    assert not gone.ok and "not reachable" in gone.problem and "refused" in gone.problem
    prometheus.answer([])
    prometheus.delay = 1.0
    started = time.monotonic()
    slow = GpuUseReader(prometheus.url, timeout=0.2).read(60, now=0)
    assert time.monotonic() - started < 0.9
    assert not slow.ok and "not reachable" in slow.problem and "timed out" in slow.problem


def values(metrics: Metrics) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = generate_latest(metrics.registry).decode()
    return {
        s.name: s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name.startswith("gangplank_gpu_use")
    }


def test_gpu_use_metrics_say_whether_the_last_read_worked_and_how_many_pods_had_data() -> None:
    metrics = Metrics()
    assert values(metrics) == {}, "no series before the first read (the rule may be off)"
    metrics.gpu_use_read(GpuUse({("ml", "a"): 1.0, ("ml", "b"): 60.0}, window=1800))
    assert values(metrics) == {
        "gangplank_gpu_use_up": 1.0,
        "gangplank_gpu_use_read_errors_total": 0.0,
        "gangplank_gpu_use_pods": 2.0,
    }
    metrics.gpu_use_read(GpuUse({}, ok=False, problem="connection refused"))
    metrics.gpu_use_read(GpuUse({}, ok=False, problem="connection refused"))
    assert values(metrics) == {
        "gangplank_gpu_use_up": 0.0,
        "gangplank_gpu_use_read_errors_total": 2.0,
        "gangplank_gpu_use_pods": 0.0,
    }
    metrics.gpu_use_read(GpuUse({("ml", "a"): 1.0}))
    assert values(metrics)["gangplank_gpu_use_up"] == 1.0
    assert values(metrics)["gangplank_gpu_use_pods"] == 1.0
    assert not math.isnan(values(metrics)["gangplank_gpu_use_read_errors_total"])
