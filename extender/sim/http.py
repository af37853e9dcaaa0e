"""gangplank over HTTP for the demo: `gangplank serve` under gunicorn, watching a fake API server
on loopback that holds the simulated cluster. The driver creates and deletes pods in that API
server and calls the verbs with kube-scheduler's wire format (`NodeNames`: nodeCacheCapable);
gangplank binds, nudges and evicts through the API server, as in a cluster.

gangplank runs on the real clock, the driver on its own (seconds since the demo began, pods
stamped from the simulation's epoch): each pod is stamped again, when it is created, from the
real time at which the driver's time began (`epoch`), so that gangplank sees it seconds old."""

from __future__ import annotations

import contextlib
import http.client
import json
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from extender.kube.patcher import RETRY_ANNOTATION
from extender.service.server import serve_command
from extender.sim.apiserver import FakeApiServer
from extender.sim.calls import Filtered, Tick
from extender.sim.runs import SimPod
from extender.sim.workload import EPOCH, stamp

if TYPE_CHECKING:
    from extender.cli.demo import DemoServer


def kubeconfig(url: str, directory: Path) -> Path:
    path = directory / "kubeconfig"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "sim", "cluster": {"server": url}}],
                "users": [{"name": "sim", "user": {}}],
                "contexts": [{"name": "sim", "context": {"cluster": "sim", "user": "sim"}}],
                "current-context": "sim",
            }
        )
    )
    return path


class HttpExtender:
    name = "gangplank (HTTP)"

    def __init__(
        self,
        port: int,
        policy: Path | None,
        log_level: str = "warning",
        log_path: Path | None = None,
        server: DemoServer | None = None,
        epoch: float | None = None,
    ) -> None:
        self.port = port
        # The real time (Unix seconds) of the driver's time 0; None: pods as the driver made them.
        self.epoch = epoch
        # The demo's: gangplank answers on the socket it holds and is stopped as a process group.
        self.server = server
        self.log_path = log_path  # the server's log goes here (else to this process's stderr)
        self.policy = policy
        self.log_level = log_level
        self.api = FakeApiServer()
        self.process: subprocess.Popen[bytes] | None = None
        self._tmp = tempfile.TemporaryDirectory(prefix="gangplank-demo-")
        self._seen = 0
        self._ours: set[str] = set()  # uids the driver deleted itself
        self._pending: set[str] = set()
        self._connection: http.client.HTTPConnection | None = None

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        config = kubeconfig(self.api.url, Path(self._tmp.name))
        # The simulator's kube-scheduler model learns of a bind only from its own bind calls, so
        # gangplank leaves every member to it here (`loadtest/gang_start.py` models planned binds
        # in process; the HTTP stand-in, `standin.py`, reads them from the API server).
        command = serve_command(
            self.port,
            "--kubeconfig",
            str(config),
            "--no-bind-planned-members",
            log_level=self.log_level,
        )
        if self.policy is not None:
            command += ["--policy", str(self.policy)]
        return command

    def start(self, nodes: Sequence[dict[str, Any]]) -> None:
        self.api.__enter__()
        for node in nodes:
            self.api.put("nodes", node)
        spawn = subprocess.Popen if self.server is None else self.server.start
        if self.log_path is None:
            self.process = spawn(self.command())
        else:
            with self.log_path.open("ab") as log:
                self.process = spawn(self.command(), stderr=log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"gangplank serve exited with {self.process.returncode}")
            try:
                if self._call("GET", "/readyz")[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"gangplank did not become ready on {self.base}")

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
        elif self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
        self.api.__exit__()
        self._tmp.cleanup()

    # ---- HTTP ----------------------------------
    def _call(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        for attempt in (0, 1):
            if self._connection is None:
                self._connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            try:
                data = None if body is None else json.dumps(body)
                headers = {"Content-Type": "application/json"} if body is not None else {}
                self._connection.request(method, path, body=data, headers=headers)
                response = self._connection.getresponse()
                text = response.read()
                return response.status, json.loads(text) if text else None
            except (OSError, http.client.HTTPException):
                self._connection.close()
                self._connection = None
                if attempt:
                    raise
        raise AssertionError("unreachable")

    # ---- the cluster ----------------------------------
    def created(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            if self.epoch is not None:
                seconds = pod.info.created - EPOCH  # the driver's time of its creation
                # stamp(t) is EPOCH + t: the real time `seconds` after the driver's time 0
                pod.raw["metadata"]["creationTimestamp"] = stamp(self.epoch - EPOCH + seconds)
            self._pending.add(pod.uid)
            self.api.put("pods", pod.raw)

    def deleted(self, pods: Sequence[SimPod], now: float) -> None:
        for pod in pods:
            self._ours.add(pod.uid)
            self._pending.discard(pod.uid)
            with contextlib.suppress(KeyError):  # evicted by gangplank already
                self.api.delete("pods", pod.info.namespace, pod.info.name)

    def updated(self, pods: Sequence[SimPod], now: float) -> None:
        pass  # the demo's workload has no faults: nothing reports a pod's status

    # ---- the verbs ----------------------------------
    def filter(self, pod: SimPod, names: list[str], now: float) -> Filtered:
        status, answer = self._call(
            "POST", "/scheduler/filter", {"Pod": pod.raw, "Nodes": None, "NodeNames": names}
        )
        if status != 200 or answer.get("Error"):
            return Filtered([], failed=dict.fromkeys(names, str(answer)))
        return Filtered(
            list(answer.get("NodeNames") or []),
            dict(answer.get("FailedNodes") or {}),
            dict(answer.get("FailedAndUnresolvableNodes") or {}),
        )

    def prioritize(self, pod: SimPod, names: list[str], now: float) -> dict[str, int]:
        status, answer = self._call(
            "POST", "/scheduler/prioritize", {"Pod": pod.raw, "Nodes": None, "NodeNames": names}
        )
        return {e["Host"]: e["Score"] for e in answer} if status == 200 else {}

    def preempt(
        self, pod: SimPod, candidates: dict[str, list[SimPod]], now: float
    ) -> dict[str, list[str]]:
        meta = {
            node: {"Pods": [{"UID": p.uid} for p in pods], "NumPDBViolations": 0}
            for node, pods in candidates.items()
        }
        status, answer = self._call(
            "POST",
            "/scheduler/preempt",
            {"Pod": pod.raw, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta},
        )
        if status != 200:
            return {}
        kept = answer.get("NodeNameToMetaVictims") or {}
        return {n: [p["UID"] for p in (v.get("Pods") or [])] for n, v in kept.items()}

    def bind(self, pod: SimPod, node: str, now: float) -> str:
        info = pod.info
        status, answer = self._call(
            "POST",
            "/scheduler/bind",
            {
                "PodName": info.name,
                "PodNamespace": info.namespace,
                "PodUID": info.uid,
                "Node": node,
            },
        )
        if status != 200:
            return f"HTTP {status}"
        error = str((answer or {}).get("Error") or "")
        if not error:
            self._pending.discard(pod.uid)
        return error

    def tick(self, now: float) -> Tick:
        """What gangplank did through the API server since the last look: pods it nudged
        (annotation patches) and pods it evicted."""
        with self.api.cond:
            events = self.api.state.events["pods"][self._seen :]
            self._seen += len(events)
        tick = Tick()
        for event in events:
            uid = event.obj["metadata"].get("uid", "")
            if event.type == "DELETED" and uid not in self._ours:
                self._ours.add(uid)
                tick.evicted.append(uid)
            elif event.type == "MODIFIED" and uid in self._pending:
                annotations = event.obj["metadata"].get("annotations") or {}
                if RETRY_ANNOTATION in annotations:
                    tick.nudged.append(uid)
        return tick

    def queue_refuses(self, pod: SimPod) -> bool:
        return False  # not said over HTTP: a pod no node has room for waits for room
