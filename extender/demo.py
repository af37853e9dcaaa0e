"""`gangplank demo`: serve on the bundled example cluster and show one call of each verb.

Runs the same `gangplank serve` a cluster runs (gunicorn, one worker), with `--cluster-file`
instead of an API server, then prints the curl command for each verb with the answer it got.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from importlib.resources import files
from pathlib import Path

from extender.server import serve_command

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
    cluster = DATA / "demo-cluster.yaml"
    policy = DATA / "demo-policy.yaml"
    base = f"http://127.0.0.1:{port}"
    command = serve_command(port, "--cluster-file", str(cluster), "--policy", str(policy))
    print(f"gangplank demo: serving the example cluster in {cluster}, queues from {policy}")
    print(f"  $ {' '.join(command[2:]).replace('extender', 'gangplank', 1)}\n")
    process = subprocess.Popen(command)
    try:
        if not _wait_ready(base, process):
            print(
                f"gangplank demo: the server did not become ready on {base} "
                f"(is port {port} taken? try --port)",
                file=sys.stderr,
            )
            return 1
        failures = 0
        for verb, name, what in CALLS:
            path = DATA / "demo-requests" / name
            print(f"# {verb}: {what}")
            print(
                f"curl -s -X POST {base}/scheduler/{verb} -H 'Content-Type: application/json' "
                f"-d @{path}"
            )
            status, text = _post(f"{base}/scheduler/{verb}", path.read_bytes())
            failures += status != 200
            with contextlib.suppress(ValueError):
                text = json.dumps(json.loads(text))
            print(f"  -> HTTP {status} {text[:600]}\n")
        print(f"# the queues: use, guarantee, max, borrowing, waiting jobs\ncurl -s {base}/queues")
        failures += show_queues(f"{base}/queues")
        print(f"curl -s {base}/readyz; curl -s {base}/metrics | grep gangplank_\n")
        if once:
            return 1 if failures else 0
        print(f"gangplank is serving on {base}; run the commands above. Ctrl-C stops it.")
        process.wait()
        return 0
    except KeyboardInterrupt:
        return 0
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
