"""`gangplank demo`: serve on the bundled example cluster and show one call of each verb.

Runs the same `gangplank serve` a cluster runs (gunicorn, one worker), with `--cluster-file`
instead of an API server, then prints the curl command for each verb with the answer it got.

Both demos (this walk-through and the live one, `extender.sim.live`) run under `run_guarded`:
the demo's port is held before anything starts, its server answers there and nowhere else, and
whatever way the demo ends (its end, an error, SIGTERM, SIGINT, SIGHUP) stops the server whole.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from importlib.resources import files
from pathlib import Path
from types import FrameType
from typing import Any

from extender.core.model.text import shorten
from extender.service.server import serve_command

DATA = Path(str(files("extender") / "data"))
CALLS = (
    ("filter", "filter.json", "a pod of no gang: every node passes"),
    (
        "filter",
        "filter-unknown-node.json",
        "a queued pod offered a node the cache has not seen: that node fails, with a reason",
    ),
    (
        "filter",
        "filter-gang.json",
        "a member of gang team-a/llm-finetune (2 x 3 GPUs): the gang is planned whole, this pod "
        "passes only its planned node",
    ),
    ("prioritize", "prioritize-gang.json", "the same member: 10 for its planned node, 0 elsewhere"),
    (
        "filter",
        "filter-incomplete-gang.json",
        "a member of gang team-a/sweep, 2 of its 4 pods exist: every node fails, with the reason",
    ),
    (
        "filter",
        "filter-queue-max.json",
        "a pod of queue team-a, which the gang's reservation brought near its max of 24 GPUs: "
        "every node fails, with the queue's reason",
    ),
    ("prioritize", "prioritize.json", "a pod of no gang: neutral scores (0-10, integers)"),
    (
        "preempt",
        "preempt.json",
        "kube-scheduler's candidates narrowed to what the rules allow (a lower-priority pod "
        "alone may go), as NodeNameToMetaVictims",
    ),
    ("bind", "bind.json", "the binding (in demo mode recorded in the embedded view)"),
)


# The signals that end a demo: kill's default, Ctrl-C, the terminal closing.
STOPPING = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


class Stopped(BaseException):
    """Raised in the demo by one of STOPPING, so that every `finally` on the way out runs.

    A BaseException, as KeyboardInterrupt is: no `except Exception` swallows it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


class DemoServer:
    """The demo's `gangplank serve`.

    It is made holding a listening socket on 127.0.0.1:`port` (OSError when the port is taken),
    and the server started with `start` inherits that socket (gunicorn's `--bind fd://N`): what
    answers on the port is this server, never one left running there. The server runs in a
    process group of its own, which `stop` ends whole, gunicorn's master and its worker.
    """

    def __init__(self, port: int) -> None:
        self._listener = socket.socket()
        # As gunicorn does: a port whose last connections are in TIME_WAIT is free.
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self._listener.bind(("127.0.0.1", port))
            self._listener.listen(socket.SOMAXCONN)
        except (OSError, OverflowError):
            self._listener.close()
            raise
        self.port: int = self._listener.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self._starting = False
        self._signal: int | None = None

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        """The handler of STOPPING while the demo runs: raises Stopped, once."""
        for each in STOPPING:  # the way out is not interrupted a second time
            signal.signal(each, signal.SIG_IGN)
        self._signal = signum
        if not self._starting:  # else raised by `start` once the server's pid is known
            raise Stopped(signum)

    def start(self, command: list[str], **popen: Any) -> subprocess.Popen[bytes]:
        """Run `command` (a `serve_command`) on the held socket instead of its --bind address."""
        fd = self._listener.fileno()
        at = command.index("--bind") + 1
        self._starting = True
        try:
            self.process = subprocess.Popen(
                [*command[:at], f"fd://{fd}", *command[at + 1 :]],
                pass_fds=(fd,),
                process_group=0,
                **popen,
            )
        finally:
            self._starting = False
        self._listener.close()  # the server's copy is the only one left
        if self._signal is not None:
            raise Stopped(self._signal)
        return self.process

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM to the server's process group (gunicorn stops gracefully), SIGKILL to the
        group after `timeout` seconds; returns once the master is gone. Nothing the second time.
        """
        self._listener.close()
        if self.process is None or self.process.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            # The master is not reaped yet, so the group id is still this server's.
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


def run_guarded(port: int, demo: Callable[[DemoServer], int]) -> int:
    """Run `demo` with the port held for its server, and stop that server however it ends.

    A taken port is refused in one line (exit 2) before anything starts. SIGTERM, SIGINT and
    SIGHUP end the demo with 128 + the signal's number, after the same clean-up as a normal end
    or an error: the `finally` blocks of `demo` (its temp folder) and the server's process group
    stopped.
    """
    try:
        server = DemoServer(port)
    except OverflowError:
        print(f"gangplank demo: port {port} is not 0-65535; pick one with --port", file=sys.stderr)
        return 2
    except OSError as err:
        reason = err.strerror or str(err)
        if err.errno == errno.EADDRINUSE:
            reason += " (a server left running?)"
        print(
            f"gangplank demo: cannot listen on 127.0.0.1:{port}: {reason}; pick another port "
            "with --port",
            file=sys.stderr,
        )
        return 2
    previous: dict[signal.Signals, Any] = {}
    try:
        try:
            for each in STOPPING:
                previous[each] = signal.signal(each, server.on_signal)
            return demo(server)
        finally:
            server.stop()
    except Stopped as stopped:
        server.stop()  # again: the signal may have come during the first
        name = signal.Signals(stopped.signum).name
        print(f"\ngangplank demo: stopped by {name}; its server is stopped", file=sys.stderr)
        return 128 + stopped.signum
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)


def _post(url: str, body: bytes) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _wait_ready(base: str, process: subprocess.Popen[bytes], timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=1) as response:
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.1)
    return False


def show_queues(url: str) -> int:
    """Print one line per queue from GET /queues; 1 when it did not answer."""
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            report = json.loads(response.read())
    except (OSError, ValueError) as err:
        print(f"  -> {err}\n")
        return 1
    for q in report["queues"]:
        gpu = "nvidia.com/gpu"
        print(
            f"  -> queue {q['name']}: {q['used'].get(gpu, '0')} GPUs in use (guarantee "
            f"{q['guarantee'].get(gpu, '0')}, max {q['max'].get(gpu, '-')}), "
            f"{q['pending']['jobs']} job{'' if q['pending']['jobs'] == 1 else 's'} waiting"
        )
    print()
    return 0


def run_demo(port: int = 18888, once: bool = False) -> int:
    return run_guarded(port, lambda server: _walk_through(server, once))


# A creation time in the example's files (YAML or JSON): `creationTimestamp: '…Z'`.
STAMP = re.compile(r"""(creationTimestamp["']?:\s*["'])(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)(["'])""")
NEWEST_AGE = timedelta(minutes=2)  # how old the example's newest pod is when the demo starts


def restamp(source: Path, into: Path, now: datetime) -> Path:
    """A copy of the example cluster (`demo-cluster.yaml`, `demo-requests/`) in `into` whose
    objects were created by the clock the server runs on: the newest pod `NEWEST_AGE` before
    `now`, the others as long before it as the example says. (Served as written, pods created
    on the example's fixed day would show as waiting for days.)"""

    def when(text: str) -> datetime:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)

    cluster = (source / "demo-cluster.yaml").read_text()
    shift = now - NEWEST_AGE - max(when(m[2]) for m in STAMP.finditer(cluster))

    def shifted(text: str) -> str:
        return STAMP.sub(
            lambda m: f"{m[1]}{(when(m[2]) + shift).strftime('%Y-%m-%dT%H:%M:%SZ')}{m[3]}", text
        )

    (into / "demo-requests").mkdir(parents=True, exist_ok=True)
    (into / "demo-cluster.yaml").write_text(shifted(cluster))
    for request in (source / "demo-requests").glob("*.json"):
        (into / "demo-requests" / request.name).write_text(shifted(request.read_text()))
    return into


def _walk_through(server: DemoServer, once: bool) -> int:
    with tempfile.TemporaryDirectory(prefix="gangplank-demo-") as tmp:
        return _walk_through_in(server, once, restamp(DATA, Path(tmp), datetime.now(UTC)))


def _walk_through_in(server: DemoServer, once: bool, data: Path) -> int:
    cluster = data / "demo-cluster.yaml"
    policy = DATA / "demo-policy.yaml"
    base = server.base
    command = serve_command(server.port, "--cluster-file", str(cluster), "--policy", str(policy))
    print(
        f"gangplank demo: serving the example cluster of {DATA / 'demo-cluster.yaml'}, its pods "
        f"stamped from the real clock (a copy in {data}), queues from {policy}"
    )
    print(f"  $ {' '.join(command[2:]).replace('extender', 'gangplank', 1)}\n")
    process = server.start(command)
    if not _wait_ready(base, process):
        print(f"gangplank demo: the server did not become ready on {base}", file=sys.stderr)
        return 1
    failures = 0
    for verb, name, what in CALLS:
        path = data / "demo-requests" / name
        print(f"# {verb}: {what}")
        print(
            f"curl -s -X POST {base}/scheduler/{verb} -H 'Content-Type: application/json' "
            f"-d @{path}"
        )
        status, text = _post(f"{base}/scheduler/{verb}", path.read_bytes())
        failures += status != 200
        with contextlib.suppress(ValueError):
            text = json.dumps(json.loads(text))
        print(f"  -> HTTP {status} {shorten(text, 600)}\n")
    print(f"# the queues: use, guarantee, max, borrowing, waiting jobs\ncurl -s {base}/queues")
    failures += show_queues(f"{base}/queues")
    print(f"curl -s {base}/readyz; curl -s {base}/metrics | grep gangplank_\n")
    if once:
        return 1 if failures else 0
    print(f"gangplank is serving on {base}; run the commands above. Ctrl-C stops it.")
    code = process.wait()
    print(f"gangplank demo: its server exited with {code}", file=sys.stderr)
    return 1
