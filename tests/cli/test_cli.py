"""`gangplank` and `kubectl gangplank` as people type them: the installed console scripts, run in
a subprocess. Global flags (--url, -o, -n) go before or after the command; a mistake in any flag
or file is one line on stderr naming it, a non-zero exit code, never a traceback; every --help
shows the defaults.

The cases run side by side (each is a fresh Python start), once per module."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from extender.cli.args import quiet_when_the_reader_leaves
from extender.cli.main import build_parser
from tests.cli.test_why_cli import waiting_gang_server

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
POLICY = str(ROOT / "policies" / "example.yaml")
DEMO_CLUSTER = str(ROOT / "extender" / "data" / "demo-cluster.yaml")
KUEUE = """apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec: {cohort: ml}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: research, namespace: team-a}
spec: {clusterQueue: research}
"""


@dataclass(frozen=True)
class Case:
    program: str  # gangplank or kubectl-gangplank
    args: tuple[str, ...]  # {url}: the test server, {tmp}: a directory of files
    env: Mapping[str, str] = field(default_factory=dict)


def gangplank(*args: str, **env: str) -> Case:
    return Case("gangplank", args, env)


def kubectl(*args: str) -> Case:
    return Case("kubectl-gangplank", args)


WORKS = {
    "status with --url after the command, as the README and the demo print it": (
        gangplank("status", "--url", "{url}"),
        "gang team-a/train",
    ),
    "status with --url before the command": (gangplank("--url", "{url}", "status"), "waiting 1"),
    "status -o json after the command": (
        gangplank("status", "-o", "json", "--url", "{url}"),
        '"waitingGangs"',
    ),
    "why POD --url": (
        gangplank("why", "team-a/train-0", "--url", "{url}"),
        "pod team-a/train-0, gang team-a/train",
    ),
    "why NAME -n NAMESPACE -o yaml, all after the command": (
        gangplank("why", "train-0", "-n", "team-a", "-o", "yaml", "--url", "{url}"),
        "job: gang team-a/train",
    ),
    "-n before the command, as kubectl users type it": (
        gangplank("-n", "team-a", "--url", "{url}", "why", "train-0"),
        "pod team-a/train-0",
    ),
    "queues QUEUE --url": (gangplank("queues", "--url", "{url}", "team-a"), "GUARANTEE"),
    "pods --waiting --url": (
        gangplank("pods", "--waiting", "--url", "{url}"),
        "team-a/train-0",
    ),
    "the URL from GANGPLANK_URL": (gangplank("status", GANGPLANK_URL="{url}"), "waiting 1"),
    "kubectl gangplank why POD --url": (
        kubectl("why", "team-a/train-0", "--url", "{url}"),
        "pod team-a/train-0",
    ),
    "policy check prints a large memory amount as written (1e+04Gi before)": (
        gangplank("policy", "check", "{tmp}/memory.yaml"),
        "guarantee memory: 4G; max memory: 10000Gi",
    ),
    "kubectl gangplank -o json status --url": (
        kubectl("-o", "json", "status", "--url", "{url}"),
        '"plans"',
    ),
}

# (the case, what its one line must say, its exit code)
REFUSED = {
    "a --url that is not a URL": (gangplank("--url", "notaurl", "status"), "--url", 2),
    "a --url of another scheme, after the command": (
        gangplank("status", "--url", "ftp://x"),
        "--url",
        2,
    ),
    "a --url whose port is not a number": (
        kubectl("why", "a/b", "--url", "http://127.0.0.1:x"),
        "--url",
        2,
    ),
    "a GANGPLANK_URL that is not a URL": (
        gangplank("status", GANGPLANK_URL="localhost:18888"),
        "GANGPLANK_URL",
        2,
    ),
    "an unreachable extender, named": (
        gangplank("status", "--url", "http://127.0.0.1:9"),
        "cannot reach gangplank at http://127.0.0.1:9",
        1,
    ),
    "an output format that does not exist": (gangplank("status", "-o", "xml"), "--output", 2),
    "-n before a command that takes no namespace": (
        gangplank("-n", "team-a", "status"),
        "-n/--namespace goes with why and pods, not status",
        2,
    ),
    "-o before a command that prints no table": (
        gangplank("-o", "json", "serve"),
        "-o/--output goes with",
        2,
    ),
    "why without a pod": (gangplank("why"), "pod", 2),
    "why of a pod that is not NAME or NAMESPACE/NAME (exit 1, as a pod not found, before)": (
        gangplank("why", "bad//name", "--url", "{url}"),
        "pod 'bad//name' is not NAME or NAMESPACE/NAME",
        2,
    ),
    "a flag a subcommand does not know points to that subcommand's help (to gangplank's before)": (
        gangplank("policy", "check", "--bogus", POLICY),
        "unrecognized arguments: --bogus (see `gangplank policy check --help`)",
        2,
    ),
    "pods --limit 0": (gangplank("pods", "--limit", "0"), "--limit", 2),
    "simulate --load -1 (math domain error before)": (
        gangplank("simulate", "--load", "-1"),
        "--load",
        2,
    ),
    "simulate --hours 0 (math domain error before)": (
        gangplank("simulate", "--hours", "0"),
        "--hours",
        2,
    ),
    "simulate --queues a=x": (gangplank("simulate", "--queues", "a=x"), "--queues", 2),
    "simulate --queues naming no queue of the policy": (
        gangplank("simulate", "--policy", POLICY, "--queues", "nobody=1"),
        "--queues: nobody is not a leaf queue",
        2,
    ),
    "simulate --jobs -5": (gangplank("simulate", "--jobs", "-5"), "--jobs", 2),
    "simulate --cluster synthetic:0x8": (
        gangplank("simulate", "--cluster", "synthetic:0x8"),
        "--cluster",
        2,
    ),
    "simulate --cluster synthetic:foo": (
        gangplank("simulate", "--cluster", "synthetic:foo"),
        "synthetic:NODESxGPUS",
        2,
    ),
    "simulate --compare with a synthetic cluster that cannot be": (
        gangplank("simulate", "--compare", "cluster=synthetic:8", "label=b"),
        "--compare",
        2,
    ),
    "simulate --cluster of traces not there says they are not in the repository (pointed to "
    "../shared/traces/README.md inside the missing directory before)": (
        gangplank("simulate", "--cluster", "{tmp}/traces"),
        "{tmp}/traces: no such file; the public traces are not in the repository",
        2,
    ),
    "simulate --kick-seconds 0": (gangplank("simulate", "--kick-seconds", "0"), "--kick", 2),
    "simulate --cycle-ms -1": (gangplank("simulate", "--cycle-ms", "-1"), "--cycle-ms", 2),
    "simulate --workload of a file that is not a trace (0 jobs and exit 0 before)": (
        gangplank("simulate", "--workload", "{tmp}/notes.txt"),
        "--workload {tmp}/notes.txt: not an alibaba-gpu-v2023 pod CSV",
        2,
    ),
    "simulate --out that is a file": (
        gangplank("simulate", "--out", "{tmp}/notes.txt"),
        "--out",
        2,
    ),
    "simulate --out it cannot create, before the run (a traceback after it before)": (
        gangplank("simulate", "--out", "/proc/no-such-report"),
        "--out /proc/no-such-report: cannot create it",
        2,
    ),
    "demo --out it cannot create, before the demo runs": (
        gangplank("demo", "--out", "/proc/no-such-report"),
        "--out /proc/no-such-report: cannot create it",
        2,
    ),
    "serve --kubeconfig of no file, before gunicorn starts": (
        gangplank("serve", "--kubeconfig", "/nonexistent"),
        "--kubeconfig /nonexistent: no such file",
        2,
    ),
    "serve --in-cluster outside a pod": (gangplank("serve", "--in-cluster"), "--in-cluster", 2),
    "serve with a yes/no variable that says neither (read as no before)": (
        gangplank("serve", GANGPLANK_IN_CLUSTER="maybe"),
        "GANGPLANK_IN_CLUSTER=maybe: not yes or no",
        2,
    ),
    "serve --tls-cert and --tls-key not PEM (workers failed to boot, forever, before)": (
        gangplank("serve", "--tls-cert", "{tmp}/notes.txt", "--tls-key", "{tmp}/notes.txt"),
        "--tls-cert {tmp}/notes.txt and --tls-key {tmp}/notes.txt: not a certificate and its "
        "private key in PEM",
        2,
    ),
    "serve --bind to a port that cannot be (a traceback before)": (
        gangplank("serve", "--cluster-file", DEMO_CLUSTER, "--bind", "127.0.0.1:99999"),
        "bind address '127.0.0.1:99999': the port must be 0-65535",
        2,
    ),
    "serve --bind to an address not this machine's (five gunicorn retries before)": (
        gangplank("serve", "--cluster-file", DEMO_CLUSTER, "--bind", "192.0.2.1:18901"),
        "--bind 192.0.2.1:18901: cannot listen there: Cannot assign requested address",
        2,
    ),
    "serve --cluster-file with a YAML mistake (several lines and gunicorn's before)": (
        gangplank("serve", "--cluster-file", "{tmp}/broken.yaml"),
        "cannot read cluster file {tmp}/broken.yaml: while parsing a flow node",
        2,
    ),
    "serve --cluster-file that is not text (a traceback before)": (
        gangplank("serve", "--cluster-file", "{tmp}/binary.yaml"),
        "cannot read cluster file {tmp}/binary.yaml: not a text file (byte 0 is not UTF-8)",
        2,
    ),
    "serve --policy that is not text (a traceback before)": (
        gangplank("serve", "--cluster-file", DEMO_CLUSTER, "--policy", "{tmp}/binary.yaml"),
        "--policy {tmp}/binary.yaml: not a text file (byte 0 is not UTF-8)",
        2,
    ),
    "policy check of a file that is not text (a traceback before)": (
        gangplank("policy", "check", "{tmp}/binary.yaml"),
        "{tmp}/binary.yaml: not a text file (byte 0 is not UTF-8)",
        2,
    ),
    "policy import of a file that is not text (a traceback before)": (
        gangplank("policy", "import", "{tmp}/binary.yaml"),
        "{tmp}/binary.yaml: not a text file (byte 0 is not UTF-8)",
        2,
    ),
    "serve --stale-after -1": (
        gangplank("serve", "--cluster-file", "{tmp}/kueue.yaml", "--stale-after", "-1"),
        "--stale-after must be more than 0",
        2,
    ),
    "policy check of Kueue manifests": (
        gangplank("policy", "check", "{tmp}/kueue.yaml"),
        "gangplank policy import {tmp}/kueue.yaml",
        2,
    ),
    "policy import of a gangplank policy points to policy check (said only 'no Kueue or "
    "Volcano queues found' before)": (
        gangplank("policy", "import", POLICY),
        "no Kueue or Volcano queues found (given: Policy): it reads Kueue's ClusterQueue, "
        "Cohort, LocalQueue, ResourceFlavor and Topology and Volcano's Queue; a gangplank Policy "
        "is checked with `gangplank policy check`",
        2,
    ),
    "policy check of an empty file (valid, 0 queues before)": (
        gangplank("policy", "check", "{tmp}/empty.yaml"),
        "{tmp}/empty.yaml: empty",
        2,
    ),
    "policy check of a YAML mistake, on one line": (
        gangplank("policy", "check", "{tmp}/broken.yaml"),
        "{tmp}/broken.yaml:2:1: not valid YAML",
        2,
    ),
    "policy check of a quantity in GB, with the suffixes it may have meant": (
        gangplank("policy", "check", "{tmp}/gigabytes.yaml"),
        "'512GB' is not a quantity; did you mean 512G or 512Gi?",
        2,
    ),
    "policy check of idleGpu.below written as a fraction (passed silently before)": (
        gangplank("policy", "check", "{tmp}/fraction.yaml"),
        "below: 0.1 looks like a fraction; below is a percent (0-100): write 10 for 10%",
        2,
    ),
    "policy check of a fairness window shorter than its half-life": (
        gangplank("policy", "check", "{tmp}/fairness.yaml"),
        "fairness.window: 24h is shorter than the half-life (48h): keep at least one half-life "
        "of usage",
        2,
    ),
    "policy without a subcommand names them (required: policy_command before)": (
        gangplank("policy"),
        "gangplank policy: a subcommand is needed: check or import (their usage is above)",
        2,
    ),
    "demo --port 70000": (gangplank("demo", "--port", "70000"), "--port", 2),
    "demo --jobs 0": (gangplank("demo", "--jobs", "0"), "--jobs", 2),
    "demo --out that is a file, before the demo runs": (
        gangplank("demo", "--out", "{tmp}/notes.txt"),
        "--out",
        2,
    ),
    "probe --url that is not a URL": (
        gangplank("probe", "healthz", "--url", "x"),
        "--url",
        2,
    ),
}


def execute(case: Case, url: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GANGPLANK_URL", "KUBECONFIG", "KUBERNETES_SERVICE_HOST")
    }
    env |= {k: v.format(url=url) for k, v in case.env.items()}
    env["PYTHONPATH"] = str(ROOT)  # this checkout's code, whichever the scripts were installed from
    command = [str(BIN / case.program), *(a.format(url=url, tmp=tmp) for a in case.args)]
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp,
        start_new_session=True,  # so that what a command wrongly started can be stopped with it
    )
    try:
        out, err = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # a case that hangs fails alone, and leaves nothing behind
        os.killpg(process.pid, signal.SIGKILL)
        out, err = process.communicate()
        err += "\nstill running after 30 s"
    return subprocess.CompletedProcess(command, process.returncode, out, err)


@pytest.fixture(scope="module")
def tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("cli")
    (path / "notes.txt").write_text("# notes\nnot a trace at all\n")
    (path / "kueue.yaml").write_text(KUEUE)
    (path / "empty.yaml").write_text("# nothing yet\n")
    (path / "broken.yaml").write_text("queues: [\n")
    (path / "binary.yaml").write_bytes(b"\xff\xfe\x00bin")
    (path / "memory.yaml").write_text(
        "queues:\n  - name: big\n    guarantee: {memory: 4G}\n    max: {memory: 10000Gi}\n"
    )
    (path / "gigabytes.yaml").write_text("queues:\n  - name: big\n    max: {memory: 512GB}\n")
    (path / "fraction.yaml").write_text("lifecycle:\n  idleGpu: {below: 0.1, for: 30m}\n")
    (path / "fairness.yaml").write_text("fairness: {halfLife: 2d, window: 1d}\n")
    return path


@pytest.fixture(scope="module")
def ran(tmp: Path) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    """Every case of WORKS and REFUSED, run side by side against one test server."""
    cases = {name: case for name, (case, _) in WORKS.items()}
    cases |= {name: case for name, (case, _, _) in REFUSED.items()}
    with waiting_gang_server() as url, ThreadPoolExecutor(4) as pool:
        futures = {name: pool.submit(execute, case, url, tmp) for name, case in cases.items()}
        yield {name: future.result() for name, future in futures.items()}


@pytest.mark.parametrize("name", list(WORKS), ids=list(WORKS))
def test_a_command_as_people_type_it_works(
    ran: dict[str, subprocess.CompletedProcess[str]], name: str
) -> None:
    result, expected = ran[name], WORKS[name][1]
    assert (result.returncode, result.stderr) == (0, "")
    assert expected in result.stdout


@pytest.mark.parametrize("name", list(REFUSED), ids=list(REFUSED))
def test_a_mistake_is_one_line_naming_it_and_a_non_zero_exit(
    ran: dict[str, subprocess.CompletedProcess[str]], tmp: Path, name: str
) -> None:
    result = ran[name]
    _, says, code = REFUSED[name]
    assert "Traceback" not in result.stderr + result.stdout
    assert result.returncode == code, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert says.format(tmp=tmp) in lines[0]


def test_a_command_without_its_subcommand_prints_their_usage(
    ran: dict[str, subprocess.CompletedProcess[str]],
) -> None:
    shown = ran["policy without a subcommand names them (required: policy_command before)"].stdout
    assert shown.startswith("usage: gangplank policy")
    assert "check" in shown and "import" in shown and "validate a policy file" in shown


def parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


@pytest.mark.parametrize("parser", list(parsers(build_parser())), ids=lambda p: f"{p.prog} --help")
def test_every_help_shows_the_defaults(parser: argparse.ArgumentParser) -> None:
    text = " ".join(parser.format_help().split())
    for action in parser._actions:
        if action.default in (None, False, "", argparse.SUPPRESS) or action.help is None:
            continue
        assert f"default: {action.default})" in text or f"default {action.default})" in text, (
            action.option_strings
        )
    if "--url URL" in text:
        assert "--url URL base URL of the running extender (default: $GANGPLANK_URL, else " in (
            text
        )


# A reader that stops early (`gangplank pods | head -1`, `… | grep -q`): the command stops quietly
# with 141 (128 + SIGPIPE), as `ls | head` does; before, a BrokenPipeError traceback.
CLOSED_EARLY = {
    "policy check piped into a reader that already left": gangplank("policy", "check", POLICY),
    "policy import piped into a reader that already left": gangplank(
        "policy", "import", str(ROOT / "tests/data/upstream/kueue/shared-quota-setup.yaml")
    ),
    "pods -o json piped into a reader that already left": gangplank(
        "pods", "-o", "json", "--url", "{url}"
    ),
    "kubectl gangplank status piped into a reader that already left": kubectl(
        "status", "--url", "{url}"
    ),
}


@pytest.fixture(scope="module")
def closed_early(tmp: Path) -> Iterator[dict[str, subprocess.CompletedProcess[str]]]:
    with waiting_gang_server() as url:
        yield {name: _into_closed_pipe(case, url, tmp) for name, case in CLOSED_EARLY.items()}


def _into_closed_pipe(case: Case, url: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written
    command = [str(BIN / case.program), *(a.format(url=url, tmp=tmp) for a in case.args)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        return subprocess.run(
            command, stdout=write, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp, timeout=30
        )
    finally:
        os.close(write)


@pytest.mark.parametrize("name", list(CLOSED_EARLY), ids=list(CLOSED_EARLY))
def test_output_into_a_pipe_whose_reader_left_stops_quietly(
    closed_early: dict[str, subprocess.CompletedProcess[str]], name: str
) -> None:
    result = closed_early[name]
    assert (result.returncode, result.stderr) == (141, ""), result


def test_a_broken_pipe_that_is_not_stdout_still_shows() -> None:
    def command() -> int:
        raise BrokenPipeError(32, "the demo's connection to gunicorn")

    with pytest.raises(BrokenPipeError, match="gunicorn"):
        quiet_when_the_reader_leaves(command)


def test_policy_check_of_dash_reads_standard_input_as_policy_import_does() -> None:
    # "invalid: -: cannot read: No such file or directory" before
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [str(BIN / "gangplank"), "policy", "check", "-"]
    good = subprocess.run(
        command, input=Path(POLICY).read_text(), capture_output=True, text=True, env=env
    )
    assert (good.returncode, good.stdout.splitlines()[0]) == (0, "-: valid, 6 queues")
    bad = subprocess.run(
        command, input="queues: [{name: a, weight: '2'}]\n", capture_output=True, text=True, env=env
    )
    assert (bad.returncode, bad.stderr) == (
        2,
        "invalid: -: queue a: weight: '2' is text: write the number without quotes\n",
    )


def test_policy_check_and_import_of_standard_input_that_is_not_text_say_so() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for verb in ("check", "import"):
        done = subprocess.run(
            [str(BIN / "gangplank"), "policy", verb, "-"],
            input=b"\xff\xfe\x00",
            capture_output=True,
            env=env,
        )
        assert done.returncode == 2, done.stderr  # a UnicodeEncodeError traceback before
        assert b"-: not a text file (byte 0 is not UTF-8)" in done.stderr
        assert b"Traceback" not in done.stderr


def test_serve_leaves_a_socket_handed_over_to_gunicorn(monkeypatch: pytest.MonkeyPatch) -> None:
    # gunicorn's USR2 upgrade starts the same command with GUNICORN_FD while the old master
    # still listens on the port: checking that the port is free refused the upgrade
    from extender.cli.main import _check_bind
    from extender.service.settings import SettingsError

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(SettingsError, match="cannot listen there: Address already in use"):
            _check_bind(address)
        monkeypatch.setenv("GUNICORN_FD", "5")
        _check_bind(address)
    _check_bind("tcp://127.0.0.1:0")  # gunicorn's tcp:// form
