"""`make demo` runs `gangplank demo`: gangplank under gunicorn, a simulated cluster behind a fake
API server, a generated workload driven over HTTP as kube-scheduler would; `--curl` keeps the
walk-through of one call per verb."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from extender.cli.demo import DATA, DemoServer, run_guarded
from extender.sim.live import typed_as
from tests.serving import Served, free_port


@pytest.mark.slow
def test_the_live_demo_runs_jobs_through_gangplank_over_http_and_writes_its_report(
    tmp_path: Path, temp: Path
) -> None:
    port = free_port()
    result = _demo_once(
        temp, "--port", str(port), "--jobs", "12", "--seconds", "6", "--out", str(tmp_path)
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "every member bound" in out and "(gang of 2 x" in out, "gangs start whole"
    assert "jobs started" in out and "GPU-hours held by incomplete gangs            0" in out
    assert "-> queue team-a:" in out, "GET /queues answers after the run"
    runs = json.loads((tmp_path / "report.json").read_text())["runs"]
    assert runs[0]["started"] == 12
    assert runs[0]["extender_calls"]["bind"] >= 12
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()
    assert not _ready(f"http://127.0.0.1:{port}") and list(temp.iterdir()) == [], "cleaned up"


def test_the_curl_demo_serves_and_answers_every_printed_call() -> None:
    # --curl writes no report: an --out it could not create does not stop it (the image's user
    # may not write its working directory)
    demo = ["demo", "--curl", "--once", "--port", str(free_port()), "--out", "/proc/no-report"]
    result = subprocess.run(
        [sys.executable, "-m", "extender", *demo],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    for verb in ("filter", "prioritize", "preempt", "bind"):
        assert f"/scheduler/{verb} -H 'Content-Type: application/json' -d @" in out
    assert out.count("-> HTTP 200") == 9
    assert "gpu-new-9 is not in gangplank's cache yet" in out
    assert '"NodeNames": ["gpu-b1"]' in out, "the gang member passes its planned node only"
    assert '{"Host": "gpu-b1", "Score": 10}' in out
    assert "gang team-a/sweep: 2 of 4 pods exist" in out
    assert "queue team-a: nvidia.com/gpu 24 of max 24 in use, pod team-a/llm-eval needs 4" in out
    assert "-> queue team-a: 24 GPUs in use (guarantee 16, max 24)" in out


def test_the_cli_names_its_commands() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "extender", "--help"], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0
    for command in ("serve", "demo", "probe"):
        assert command in result.stdout


# ---- the demo owns its port and its server ----------------------------------


@pytest.fixture(scope="module")
def leftover_server() -> Iterator[Served]:
    """A gangplank already serving on a port, as one left running by an earlier demo."""
    with Served(
        "--cluster-file", str(DATA / "demo-cluster.yaml"), "--log-level", "error"
    ) as server:
        yield server


@pytest.mark.parametrize("walk", [[], ["--curl"]], ids=["the live demo", "the curl walk-through"])
def test_a_demo_on_a_port_another_server_holds_refuses_it_in_one_line_and_writes_nothing(
    tmp_path: Path, temp: Path, leftover_server: Served, walk: list[str]
) -> None:
    result = _demo_once(
        temp, *walk, "--port", str(leftover_server.port), *SHORT, "--out", str(tmp_path / "report")
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    assert result.stderr.strip().splitlines() == [
        f"gangplank demo: cannot listen on 127.0.0.1:{leftover_server.port}: Address already "
        "in use (a server left running?); pick another port with --port"
    ]
    assert not (tmp_path / "report").exists()
    assert _ready(leftover_server.base), "the other server is left alone"


@pytest.mark.parametrize(
    ("walk", "signum"),
    [
        ([], signal.SIGTERM),
        ([], signal.SIGINT),
        ([], signal.SIGHUP),
        (["--curl"], signal.SIGTERM),
    ],
    ids=[
        "the live demo, SIGTERM (kill)",
        "the live demo, SIGINT (Ctrl-C)",
        "the live demo, SIGHUP (the terminal closed)",
        "the curl walk-through, SIGTERM",
    ],
)
def test_a_signal_to_the_demo_stops_its_server_master_and_worker_and_removes_its_temp_folder(
    tmp_path: Path, temp: Path, walk: list[str], signum: signal.Signals
) -> None:
    port = free_port()
    with (tmp_path / "out.txt").open("wb") as out:
        demo = subprocess.Popen(
            [*GANGPLANK_DEMO, *walk, "--port", str(port), "--out", str(tmp_path / "report")],
            env={**os.environ, "TMPDIR": str(temp)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    server: list[int] = []
    try:
        deadline = time.monotonic() + 90
        while not _ready(f"http://127.0.0.1:{port}"):
            assert demo.poll() is None, (tmp_path / "out.txt").read_text()
            assert time.monotonic() < deadline, "the demo's server did not answer /readyz"
            time.sleep(0.1)
        server = _descendants(demo.pid)
        assert len(server) == 2, f"gunicorn's master and its worker: {server}"
        demo.send_signal(signum)
        assert demo.wait(timeout=60) == 128 + signum, (tmp_path / "out.txt").read_text()
        assert [pid for pid in server if _running(pid)] == [], "nothing of its server is left"
        assert not _ready(f"http://127.0.0.1:{port}")
        assert list(temp.iterdir()) == [], "its temp folder (the kubeconfig) is removed"
        assert not (tmp_path / "report").exists()
        assert f"stopped by {signum.name}" in (tmp_path / "out.txt").read_text()
    finally:
        for pid in [demo.pid, *server]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        demo.wait()


def test_a_demo_that_cannot_write_its_report_says_so_in_one_line_and_stops_its_server(
    tmp_path: Path, temp: Path
) -> None:
    port = free_port()
    not_a_folder = tmp_path / "report"
    not_a_folder.write_text("")
    result = _demo_once(temp, "--port", str(port), *SHORT, "--out", str(not_a_folder))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"gangplank demo: --out {not_a_folder}: a file, not a directory"
    ]
    assert not _ready(f"http://127.0.0.1:{port}")
    assert list(temp.iterdir()) == []


# A stand-in for `gangplank serve`: a master that forks a worker; both wait to be stopped.
MASTER_AND_WORKER = "import os, time; os.fork(); time.sleep(120)"


@pytest.mark.parametrize(
    "ending", ["returns", "raises"], ids=["the demo ends", "the demo fails with an error"]
)
def test_however_a_demo_ends_its_servers_whole_process_group_is_stopped(ending: str) -> None:
    started: list[int] = []

    def demo(server: DemoServer) -> int:
        process = server.start([sys.executable, "-c", MASTER_AND_WORKER, "--bind", "x"])
        deadline = time.monotonic() + 10
        while len(started) < 2 and time.monotonic() < deadline:
            started[:] = [process.pid, *_descendants(process.pid)]
            time.sleep(0.05)
        assert len(started) == 2 and os.getpgid(started[1]) == process.pid != os.getpgid(0)
        if ending == "raises":
            raise RuntimeError("the demo broke")
        return 0

    if ending == "raises":
        with pytest.raises(RuntimeError, match="the demo broke"):
            run_guarded(free_port(), demo)
    else:
        assert run_guarded(free_port(), demo) == 0
    deadline = time.monotonic() + 5
    while any(_running(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)  # the worker, orphaned with its master, is reaped by init
    assert [pid for pid in started if _running(pid)] == []


GANGPLANK_DEMO = [sys.executable, "-m", "extender", "demo"]
SHORT = ("--jobs", "2", "--seconds", "1")  # a run as short as it gets


@pytest.fixture
def temp(tmp_path: Path) -> Path:
    """The demo's TMPDIR: where its temp folder goes."""
    (tmp_path / "tmp").mkdir()
    return tmp_path / "tmp"


def _demo_once(temp: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GANGPLANK_DEMO, "--once", *flags],
        env={**os.environ, "TMPDIR": str(temp)},
        capture_output=True,
        text=True,
        timeout=180,
    )


def _ready(base: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base}/readyz", timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


def _descendants(pid: int) -> list[int]:
    children = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True)
    found = [int(child) for child in children.stdout.split()]
    return [grand for child in found for grand in [child, *_descendants(child)]]


def _running(pid: int) -> bool:
    """Alive and not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as response:
        return bytes(response.read())


def _oldest_pending(metrics: bytes) -> float:
    values = [
        float(line.rsplit(" ", 1)[1])
        for line in metrics.decode().splitlines()
        if line.startswith("gangplank_queue_oldest_pending_seconds{")
    ]
    return max(values, default=0.0)


@contextlib.contextmanager
def _demo_serving(
    tmp_path: Path,
    temp: Path,
    flags: list[str],
    until: str,
    meanwhile: Callable[[str], None] = lambda base: None,
) -> Iterator[str]:
    """`gangplank demo FLAGS` started, `meanwhile(base)` called until its output says `until`;
    then its base URL, and it is stopped (SIGTERM) after the block."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    output = tmp_path / "out.txt"
    with output.open("wb") as out:
        demo = subprocess.Popen(
            [*GANGPLANK_DEMO, *flags, "--port", str(port)],
            env={**os.environ, "TMPDIR": str(temp)},
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 120
        while until not in output.read_text():
            assert demo.poll() is None, output.read_text()
            assert time.monotonic() < deadline, f"the demo did not say {until!r}"
            with contextlib.suppress(OSError):
                meanwhile(base)
            time.sleep(0.2)
        yield base
    finally:
        demo.send_signal(signal.SIGTERM)
        demo.wait(timeout=60)


@pytest.mark.slow
def test_the_live_demos_pods_are_seconds_old_for_gangplank_not_days(
    tmp_path: Path, temp: Path
) -> None:
    """Stamped from the simulator's fixed day (2026-12-01) before, while gangplank runs on the
    real clock: `pods --waiting` said 5d for pods seconds old, and the queued-too-long metric
    was over 500,000 s."""
    waits: list[float] = []
    oldest: list[float] = []

    def look(base: str) -> None:
        pods = json.loads(_get(f"{base}/pods?waiting=true"))["pods"]
        waits.extend(p["waitingSeconds"] for p in pods)
        oldest.append(_oldest_pending(_get(f"{base}/metrics")))

    flags = ["--jobs", "16", "--seconds", "4", "--out", str(tmp_path / "report")]
    with _demo_serving(tmp_path, temp, flags, "keeps serving", look):
        pass
    assert waits and max(oldest) > 0, "pods waited during the run"
    assert max(waits) < 120 and max(oldest) < 120, (max(waits), max(oldest))


def test_the_curl_demos_pods_are_minutes_old_for_gangplank_not_days(
    tmp_path: Path, temp: Path
) -> None:
    """The example's pods were served as written, created on its fixed day: `gangplank pods
    --waiting` said 5d (the README showed 4d)."""
    with _demo_serving(tmp_path, temp, ["--curl"], "Ctrl-C stops it") as base:
        shown = subprocess.run(
            [str(Path(sys.executable).parent / "gangplank"), "pods", "--waiting", "--url", base],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert shown.returncode == 0, shown.stderr
    rows = [line.split() for line in shown.stdout.splitlines()[1:]]
    assert rows and {row[-1] for row in rows} <= {"2m", "3m"}, shown.stdout
    assert list(temp.iterdir()) == [], "the restamped copy is removed"


@pytest.mark.parametrize(
    ("script", "on_path", "typed"),
    [
        (".venv/bin/gangplank", None, ".venv/bin/gangplank"),
        (".venv/bin/gangplank", "/usr/local/bin/gangplank", ".venv/bin/gangplank"),
        ("/usr/local/bin/gangplank", "/usr/local/bin/gangplank", "gangplank"),
        ("/x/extender/__main__.py", None, "gangplank"),
    ],
    ids=[
        "after make demo, the venv's script, which PATH does not find, is named by its path "
        "(`gangplank status` was not found before)",
        "another gangplank on PATH is not the one that runs: the path again",
        "the gangplank PATH finds is typed as gangplank",
        "python -m extender: gangplank",
    ],
)
def test_the_live_demo_names_the_gangplank_to_type_as_it_can_be_typed(
    script: str, on_path: str | None, typed: str
) -> None:
    assert typed_as(script, on_path) == typed
