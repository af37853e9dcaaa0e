"""A live gangplank and a live Prometheus on loopback, for the tests and pictures that need real
servers: `gangplank serve` (gunicorn) on the demo's cluster and policy, driven with the demo's
calls, and Debian's `prometheus` scraping it."""

from __future__ import annotations

import http.client
import json
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from extender.cli.demo import CALLS, DATA
from extender.service.server import serve_command

PROMETHEUS = shutil.which("prometheus")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def ready(base: str) -> bool:
    """Whether the server at `base` answers /readyz with 200 (within 2 s)."""
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def wait_for(url: str, process: subprocess.Popen[bytes], seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert process.poll() is None, f"the process serving {url} exited"
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"{url} not ready")


@contextmanager
def demo_server() -> Iterator[str]:
    """`gangplank serve` on the demo cluster and policy; yields its base URL."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        serve_command(
            port,
            "--cluster-file",
            str(DATA / "demo-cluster.yaml"),
            "--policy",
            str(DATA / "demo-policy.yaml"),
        )
    )
    try:
        wait_for(f"{base}/readyz", server)
        yield base
    finally:
        server.terminate()
        server.wait(20)


def drive(base: str) -> None:
    """The demo's calls, once each, as kube-scheduler would send them."""
    for verb, name, _ in CALLS:
        body = (DATA / "demo-requests" / name).read_bytes()
        request = urllib.request.Request(
            f"{base}/scheduler/{verb}", body, {"Content-Type": "application/json"}
        )
        urllib.request.urlopen(request, timeout=10).read()


@contextmanager
def prometheus(
    target: str | Sequence[str],
    workdir: Path,
    *,
    interval: str = "1s",
    rules: Path | None = None,
    port: int | None = None,
) -> Iterator[str]:
    """Debian's Prometheus scraping `target` (host:port, or several); yields its base URL.
    `port`: where it listens (a free one by default); a second one started on the same `port`
    and `workdir` is the first one back, with the samples it kept."""
    if PROMETHEUS is None:
        raise RuntimeError("prometheus is not installed (apt-get install prometheus)")
    targets = [target] if isinstance(target, str) else list(target)
    config: dict[str, Any] = {
        "global": {"scrape_interval": interval, "evaluation_interval": interval},
        "scrape_configs": [{"job_name": "gangplank", "static_configs": [{"targets": targets}]}],
    }
    if rules is not None:
        config["rule_files"] = [str(rules)]
    (workdir / "prometheus.yml").write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{port or free_port()}"
    process = subprocess.Popen(
        [
            PROMETHEUS,
            f"--config.file={workdir / 'prometheus.yml'}",
            f"--storage.tsdb.path={workdir / 'data'}",
            f"--web.listen-address={url.removeprefix('http://')}",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for(f"{url}/-/ready", process)
        yield url
    finally:
        process.terminate()
        process.wait(20)


def post(connection: http.client.HTTPConnection, verb: str, body: bytes) -> None:
    """One extender call over a kept-alive connection, as kube-scheduler makes it."""
    connection.request(
        "POST", f"/scheduler/{verb}", body=body, headers={"Content-Type": "application/json"}
    )
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        raise RuntimeError(f"{verb}: HTTP {response.status}")
