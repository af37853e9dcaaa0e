"""A stand-in for NVIDIA's dcgm-exporter on one node, for Prometheus to scrape in tests: it serves
`/metrics` in Prometheus's text format with the metric names and labels dcgm-exporter publishes
when it attributes GPUs to pods (its Kubernetes mode: `namespace`, `pod`, `container`). A GPU no
pod holds has no pod labels, as dcgm-exporter serves it. Utilisation per pod is set while it runs;
`failing` answers 503, as an exporter that lost DCGM does.

    with DcgmStandin() as exporter:
        exporter.set("ml", "train-0", 3)        # one GPU at 3 %
        exporter.set("ml", "train-1", 2, 90)    # two GPUs: 2 % and 90 %
        exporter.remove("ml", "train-0")        # the pod is gone: its GPU goes back to the node
        # Prometheus scrapes exporter.target (host:port), path /metrics
"""

from __future__ import annotations

import threading
import time
import urllib.parse
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UTIL = "DCGM_FI_DEV_GPU_UTIL"
MODEL = "NVIDIA A100-SXM4-80GB"
DRIVER = "550.54.15"


@dataclass
class _Gpu:
    index: int
    utilisation: float = 0.0
    namespace: str = ""
    pod: str = ""
    container: str = ""

    @property
    def uuid(self) -> str:
        return f"GPU-5fd4a6b2-8c1e-4f3a-9b7d-{self.index:012x}"

    def labels(self, hostname: str) -> str:
        pairs = [
            ("gpu", str(self.index)),
            ("UUID", self.uuid),
            ("pci_bus_id", f"00000000:{0x07 + 0x10 * self.index:02X}:00.0"),
            ("device", f"nvidia{self.index}"),
            ("modelName", MODEL),
            ("Hostname", hostname),
            ("DCGM_FI_DRIVER_VERSION", DRIVER),
        ]
        if self.pod:
            pairs += [
                ("container", self.container),
                ("namespace", self.namespace),
                ("pod", self.pod),
            ]
        return ",".join(f'{name}="{value}"' for name, value in pairs)


class DcgmStandin:
    def __init__(self, hostname: str = "node-1", gpus: int = 8) -> None:
        self.hostname = hostname
        self.failing = False
        self._gpus = [_Gpu(i) for i in range(gpus)]
        self._lock = threading.Lock()
        standin = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?")[0] != "/metrics":
                    self.send_error(404)
                    return
                if standin.failing:
                    self.send_error(503, "DCGM not answering")
                    return
                body = standin.exposition().encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def target(self) -> str:
        """host:port, for a scrape config."""
        host, port = self._server.server_address[:2]
        return f"{host!s}:{port}"

    def __enter__(self) -> DcgmStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)

    def set(self, namespace: str, pod: str, *utilisation: float, container: str = "main") -> None:
        """The pod's GPUs' utilisation (%), one value per GPU; a pod not seen before gets free
        GPUs of the node, one with more values gets more."""
        with self._lock:
            held = [g for g in self._gpus if (g.namespace, g.pod) == (namespace, pod)]
            free = [g for g in self._gpus if not g.pod]
            if len(utilisation) > len(held) + len(free):
                raise ValueError(f"{self.hostname} has not {len(utilisation)} GPUs free")
            held += free[: len(utilisation) - len(held)]
            for gpu, value in zip(held, utilisation, strict=False):
                gpu.namespace, gpu.pod, gpu.container = namespace, pod, container
                gpu.utilisation = value

    def remove(self, namespace: str, pod: str) -> None:
        """The pod is gone: its GPUs are free (and idle) again, without pod labels."""
        with self._lock:
            for gpu in self._gpus:
                if (gpu.namespace, gpu.pod) == (namespace, pod):
                    gpu.namespace = gpu.pod = gpu.container = ""
                    gpu.utilisation = 0.0

    def exposition(self) -> str:
        with self._lock:
            gpus = [(g.labels(self.hostname), g.utilisation, g.pod) for g in self._gpus]
        lines = [
            f"# HELP {UTIL} GPU utilization (in %).",
            f"# TYPE {UTIL} gauge",
            *(f"{UTIL}{{{labels}}} {value:g}" for labels, value, _ in gpus),
            "# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).",
            "# TYPE DCGM_FI_DEV_FB_USED gauge",
            *(f"DCGM_FI_DEV_FB_USED{{{labels}}} {40000 if pod else 0}" for labels, _, pod in gpus),
        ]
        return "\n".join(lines) + "\n"


def first_sample(url: str, pod: str) -> float:
    """The unix time of the Prometheus at `url`'s first sample of `pod`'s GPU utilisation (its
    first scrape of a stand-in), waited for up to 30 s."""
    from loadtest import live

    query = urllib.parse.quote(f'min(timestamp({UTIL}{{pod="{pod}"}}))')
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        result = live.get(f"{url}/api/v1/query?query={query}")["data"]["result"]
        if result:
            return float(result[0]["value"][1])
        time.sleep(0.1)
    raise AssertionError(f"Prometheus did not scrape the stand-in of pod {pod} within 30 s")
