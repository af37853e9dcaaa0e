"""When gangplank may not read its requeue records, the lifecycle rules that requeue act on no job
(no count may be overwritten before it is read): that is said where people look, /readyz's
detail, `gangplank status`, a metric and one log line (not a traceback every half second), and
all clear once reading works again. The real `gangplank serve` against the fake API server."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from extender.service.settings import DEFAULT_NAMESPACE, REQUEUE_CONFIGMAP
from tests.builders import node
from tests.fakeapi import FakeApiServer
from tests.serving import Served, write_kubeconfig

# A real `gangplank serve` against the fake API server: slow.
pytestmark = pytest.mark.slow

WHERE = f"{DEFAULT_NAMESPACE}/{REQUEUE_CONFIGMAP}"
REFUSED = (
    f'cannot read requeue records {WHERE}: 403 Forbidden (configmaps "{REQUEUE_CONFIGMAP}" is '
    'forbidden: User "system:serviceaccount:gangplank:gangplank" cannot get resource '
    f'"configmaps" in API group "" in the namespace "{DEFAULT_NAMESPACE}")'
)


def get(url: str) -> Any:
    """The answer's JSON (text for /metrics), whatever its status (/readyz: 503 until synced)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            body, kind = response.read(), response.headers.get_content_type()
    except urllib.error.HTTPError as err:
        body, kind = err.read(), err.headers.get_content_type()
    return orjson.loads(body) if kind == "application/json" else body.decode()


def wait_for(check: Callable[[], bool], what: str, seconds: float = 15.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"not within {seconds:.0f} s: {what}"
        time.sleep(0.1)


def status(base: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "extender", "status", "--url", base],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_records_that_cannot_be_read_are_told_everywhere_and_all_clear_once_they_can(
    fake_api: FakeApiServer, tmp_path: Path
) -> None:
    fake_api.put("nodes", node("n0"))
    fake_api.state.forbidden_config_maps.add(DEFAULT_NAMESPACE)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", fake_api.url)  # no namespace in it
    served = Served("--kubeconfig", str(kubeconfig), env={"POD_NAMESPACE": ""})
    with served:
        ready = f"{served.base}/readyz"
        wait_for(lambda: "lifecycle rules paused" in get(ready)["reason"], "paused on /readyz")
        answer = get(ready)
        assert answer["ready"] is True, "still schedules"
        assert answer["reason"].startswith(f"cache synced; lifecycle rules paused: {REFUSED}")
        assert "gangplank_requeue_records_up 0.0" in get(f"{served.base}/metrics")
        told = status(served.base).splitlines()[0]
        assert told.startswith(f"lifecycle rules paused: {REFUSED}; gangplank's Role lets it")
        assert get(f"{served.base}/status")["paused"]["lifecycle"].startswith(REFUSED)
        time.sleep(2)  # four more passes that fail

        fake_api.state.forbidden_config_maps.clear()
        wait_for(lambda: get(ready)["reason"] == "cache synced", "all clear on /readyz")
        assert "gangplank_requeue_records_up 1.0" in get(f"{served.base}/metrics")
        assert "paused" not in status(served.base)
        assert get(f"{served.base}/status")["paused"] == {}
    log = served.output()
    assert (
        f"gangplank's namespace is {DEFAULT_NAMESPACE} (from the default: manifests/' namespace): "
        f"requeue records in ConfigMap {WHERE}" in log
    )
    failing = [line for line in log.splitlines() if "'requeues-read'" in line]
    assert len(failing) == 2, failing
    assert "failed; the pass goes on" in failing[0] and REFUSED in failing[0]
    assert "works again" in failing[1]
    assert "Traceback" not in log
