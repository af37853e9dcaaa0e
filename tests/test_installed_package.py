"""gangplank as users install it: the package alone, without extras, in a fresh venv.

The test extra pulls in much that the server needs by chance (gunicorn's gevent worker imports
`packaging`, which the test tools bring), so the suite's own venv cannot show that a dependency
is undeclared. This builds the package the way the Dockerfile does (the same files copied, then
`pip install -c constraints.txt .` with no extras; keep the two alike), once per session, then
starts `gangplank serve` and every console script from it. pip reaches PyPI (its cache is reused).
constraints.txt pins every package the image gets (`make constraints` writes it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from extender.cli.client import CLIENT_COMMANDS
from tests.serving import Served, free_port

pytestmark = pytest.mark.slow  # run by `make test-slow` (and CI), not `make test`

ROOT = Path(__file__).resolve().parent.parent
DEMO_CLUSTER = ROOT / "extender" / "data" / "demo-cluster.yaml"
CONSTRAINTS = ROOT / "constraints.txt"
# What the Dockerfile copies into its build context before it installs the package
DOCKERFILE_COPIES = ("pyproject.toml", "README.md", "constraints.txt", "extender")
# The Dockerfile's install step: the package alone, no extras, every dependency pinned
INSTALL = ("pip", "install", "-c", "constraints.txt", ".")
# Nothing of the repo or of the suite's venv may leak into the fresh one.
LEAKY = ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR")


@dataclass(frozen=True)
class Installed:
    bin: Path
    env: dict[str, str]
    cwd: Path

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin / argv[0]), *argv[1:]],
            env=self.env,
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=60,
        )


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("installed")
    source = root / "src"
    source.mkdir()
    for name in DOCKERFILE_COPIES:
        if (ROOT / name).is_dir():
            shutil.copytree(
                ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / name, source / name)
    env = {key: value for key, value in os.environ.items() if key not in LEAKY}
    env["PYTHONNOUSERSITE"] = "1"
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    # The Dockerfile's install step (INSTALL); --no-compile and --quiet only make it quicker and
    # shorter here. A short network timeout: an unreachable PyPI fails within a minute, with
    # pip's reason below.
    pip, verb, *arguments = INSTALL
    install = subprocess.run(
        [str(venv / "bin" / pip), verb, "--no-compile", "--quiet", "--timeout", "20", *arguments],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0:
        tail = "\n".join((install.stdout + install.stderr).splitlines()[-15:])
        pytest.fail(
            f"`{' '.join(INSTALL)}` of the package into a fresh venv failed (it needs PyPI or "
            f"pip's cache; is the network reachable?):\n{tail}",
            pytrace=False,
        )
    yield Installed(bin=venv / "bin", env=env, cwd=root)


def test_the_package_installed_without_extras_serves_and_answers_its_probe(
    installed: Installed,
) -> None:
    port = free_port()
    ready = f"http://127.0.0.1:{port}/readyz"
    served = Served("--cluster-file", str(DEMO_CLUSTER), port=port, health_url=ready)
    # The installed console script, not this interpreter's `-m extender`; and, like the
    # Deployment, a home it cannot write to (a file, which not even root can make a directory in)
    command = served.command
    served.command = [str(installed.bin / "gangplank"), *command[command.index("serve") :]]
    served.env = {**installed.env, "HOME": str(DEMO_CLUSTER), "XDG_RUNTIME_DIR": ""}
    with served:
        probe = installed.run("gangplank", "probe", "readyz", "--url", served.base)
        assert probe.returncode == 0, probe.stderr
    output = served.output()
    assert "Traceback" not in output and "ERROR" not in output, output


def test_the_package_installed_without_extras_simulates_and_writes_its_report(
    installed: Installed,
) -> None:
    """No tqdm, no matplotlib: plain progress lines and a page without charts, each saying in
    one line which extra brings them."""
    done = installed.run(
        "gangplank", "simulate", "--cluster", "synthetic:4x8", "--jobs", "20", "--hours", "2",
        "--seeds", "1", "--workers", "1", "--out", "plain-simulation",
    )  # fmt: skip
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert "jobs started" in done.stdout and "kube-scheduler alone" in done.stdout
    hints = [line for line in done.stderr.splitlines() if "pip install 'gangplank[sim]'" in line]
    assert len(hints) == 2, done.stderr  # the progress bar, the charts
    out = installed.cwd / "plain-simulation"
    assert json.loads((out / "report.json").read_text())["runs"]
    assert "No charts: matplotlib is not installed" in (out / "report.html").read_text()


def _commands(installed: Installed, command: list[str]) -> Iterator[list[str]]:
    """`command` and, recursively, each subcommand its help lists (in the section of its
    COMMAND argument, each on a line of its own indented by four spaces); a name already in the
    command is not walked again."""
    yield command
    help_text = installed.run(*command, "--help").stdout
    for sub in re.findall(r"^    ([a-z][\w-]*)(?:  |$)", help_text, re.MULTILINE):
        if sub not in command:
            yield from _commands(installed, [*command, sub])


def test_every_console_script_and_subcommand_prints_its_help(installed: Installed) -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    commands = [c for script in scripts for c in _commands(installed, [script])]
    assert all(["gangplank", sub] in commands for sub in CLIENT_COMMANDS)
    assert ["gangplank", "policy", "import"] in commands
    assert ["kubectl-gangplank", "why"] in commands
    failed = []
    for argv in [*([*c, "--help"] for c in commands), ["gangplank", "--version"]]:
        done = installed.run(*argv)
        if done.returncode != 0 or "Traceback" in done.stdout + done.stderr:
            failed.append(f"{' '.join(argv)}: exit {done.returncode}\n{done.stderr[-2000:]}")
    assert not failed, "\n".join(failed)


def test_the_dockerfile_installs_what_this_test_installs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    copied = {
        source
        for line in dockerfile.splitlines()
        if line.startswith("COPY ")
        for source in line.split()[1:-1]
    }
    assert copied == set(DOCKERFILE_COPIES)
    installs = [line for line in dockerfile.splitlines() if line.startswith("RUN ")]
    assert installs == [f"RUN {' '.join(INSTALL)} && rm -rf /src"], "no extras, pinned"


def pins() -> dict[str, str]:
    """constraints.txt as {canonical name: version}; every line a comment or `name==version`."""
    out: dict[str, str] = {}
    for line in CONSTRAINTS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, equals, version = line.partition("==")
            assert equals and version and " " not in line, f"constraints.txt: {line!r} is no pin"
            out[canonicalize_name(name)] = version
    return out


def test_every_runtime_dependency_is_pinned_at_a_version_pyproject_admits() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    pinned = pins()
    problems = []
    for requirement in map(Requirement, declared):
        version = pinned.get(canonicalize_name(requirement.name))
        if version is None:
            problems.append(f"{requirement.name} is not pinned")
        elif not requirement.specifier.contains(version, prereleases=True):
            problems.append(f"{requirement.name}=={version} is outside {requirement.specifier}")
    assert not problems, "; ".join(problems) + ": run `make constraints`"


def test_the_dockerfile_base_image_is_the_python_the_constraints_were_resolved_on() -> None:
    base = re.search(r"^FROM python:(\d+\.\d+)\S*", (ROOT / "Dockerfile").read_text(), re.M)
    resolved = re.search(r"^# Resolved on Python (\d+\.\d+) ", CONSTRAINTS.read_text(), re.M)
    assert base and resolved, "Dockerfile FROM python:X.Y and constraints.txt's header"
    assert base[1] == resolved[1], (
        f"the image runs Python {base[1]}, constraints.txt was resolved on {resolved[1]}"
    )


def test_the_fresh_venv_holds_exactly_the_pinned_packages(installed: Installed) -> None:
    """Nothing the package pulls in is left unpinned: a dependency added to pyproject without
    `make constraints`, or a new transitive one, shows here."""
    frozen = installed.run("pip", "freeze", "--exclude-editable", "--exclude", "gangplank")
    assert frozen.returncode == 0, frozen.stderr
    got = {
        canonicalize_name(name): version
        for name, _, version in (line.partition("==") for line in frozen.stdout.split())
    }
    assert got == pins(), "run `make constraints`"
