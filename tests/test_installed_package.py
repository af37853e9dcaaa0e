"""gangplank as users install it: the package alone, without extras, in a fresh venv.

The test extra pulls in much that the server needs by chance (gunicorn's gevent worker imports
`packaging`, which the test tools bring), so the suite's own venv cannot show that a dependency
is undeclared. This builds the package the way the Dockerfile does (the same files copied, then
`pip install .` with no extras; keep the two alike), once per session, then starts
`gangplank serve` and every console script from it. pip reaches PyPI (its cache is reused).
"""

from __future__ import annotations

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

from extender.client_cli import CLIENT_COMMANDS
from tests.serving import Served, free_port

ROOT = Path(__file__).resolve().parent.parent
DEMO_CLUSTER = ROOT / "extender" / "data" / "demo-cluster.yaml"
# What the Dockerfile copies into its build context before `pip install .`
DOCKERFILE_COPIES = ("pyproject.toml", "README.md", "extender")
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
    # The Dockerfile's install step, `pip install .` without extras; --no-compile and --quiet
    # only make it quicker and shorter here. A short network timeout: an unreachable PyPI fails
    # within a minute, with pip's reason below.
    install = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--no-compile", "--quiet", "--timeout", "20", "."],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if install.returncode != 0:
        tail = "\n".join((install.stdout + install.stderr).splitlines()[-15:])
        pytest.fail(
            "`pip install .` of the package into a fresh venv failed (it needs PyPI or pip's "
            f"cache; is the network reachable?):\n{tail}",
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
    assert installs == ["RUN pip install . && rm -rf /src"], "the package alone, no extras"
