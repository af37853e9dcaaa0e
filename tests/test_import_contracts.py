"""The import contracts in pyproject.toml hold, and each catches the import it is there to catch.

lint-imports (the command `make lint` runs) is run on a copy of the extender package and of
pyproject.toml in a temporary directory: the untouched copy keeps every contract, and one bad
import made in the copy breaks its contract and no other. Each contract has an id, and at least
one case in BAD_IMPORTS: a new contract gets its case there (its id, the file, the line appended).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parent.parent
# the venv's own command, beside its python
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"
CONTRACTS: dict[str, str] = {
    contract["id"]: contract["name"]
    for contract in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
}
# The libraries the core may import besides the standard library: pure-core forbids the
# adapters' libraries by name, this holds the core to the rest.
CORE_MAY_IMPORT = {"orjson"}  # plan records are JSON (core/gangs/plan_record.py)


@dataclass(frozen=True)
class BadImport:
    contract: str  # the id of the one contract it breaks
    path: str  # the file of the copy it goes in, made when it is not there
    line: str  # appended to the file

    def __str__(self) -> str:
        return f"{self.contract}: {self.path}: {self.line or '(a new file)'}"


BAD_IMPORTS = [
    # in a module of its own: in one the adapters import, it would reach them too and break their
    # layers as well (policy -> core -> kube, and policy and kube are independent)
    BadImport("pure-core", "extender/core/model/stray.py", "import extender.observe.gc_pauses"),
    BadImport("pure-core", "extender/core/placement/fit.py", "import flask"),
    # a lower layer importing a higher one
    BadImport("adapter-layers", "extender/kube/binder.py", "import extender.cache.store"),
    # kube reaching up to service (the plan recorder once took its Patcher from service/kicker.py)
    BadImport("adapter-layers", "extender/kube/plan_recorder.py", "import extender.service.kicker"),
    # independent siblings
    BadImport("adapter-layers", "extender/observe/logs.py", "import extender.policy.file"),
    # a new top-level package that is in no layer
    BadImport("adapter-layers", "extender/newpackage/__init__.py", ""),
    BadImport("entry-layers", "extender/service/runtime.py", "import extender.web.verbs"),
    BadImport("entry-layers", "extender/sim/http.py", "import extender.cli.main"),
    BadImport("core-layers", "extender/core/model/keys.py", "import extender.core.gangs.gang"),
    BadImport("core-layers", "extender/core/gangs/placer.py", "import extender.core.waiting"),
    BadImport("core-layers", "extender/core/queues/book.py", "import extender.core.engine"),
]


@dataclass(frozen=True)
class Linted:
    verdicts: dict[str, str]  # contract id -> "KEPT" or "BROKEN"
    output: str


def lint_imports(root: Path) -> Linted:
    """lint-imports run on the copy at root, with each contract's verdict as it prints it."""
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache", "--no-logo"],
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    output = done.stdout + done.stderr
    words = " ".join(done.stdout.split())  # it wraps long names over lines
    verdicts = {}
    for contract_id, name in CONTRACTS.items():
        found = re.search(re.escape(name) + r" (KEPT|BROKEN)\b", words)
        assert found, f"no verdict for {contract_id}:\n{output}"
        verdicts[contract_id] = found[1]
    assert done.returncode == (1 if "BROKEN" in verdicts.values() else 0), output
    return Linted(verdicts, output)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The extender package and pyproject.toml, copied to a directory of their own."""
    shutil.copytree(
        ROOT / "extender",
        tmp_path / "extender",
        ignore=shutil.ignore_patterns("__pycache__", "data"),
    )
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_every_contract_has_an_id_and_a_bad_import_that_breaks_it() -> None:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"][
        "contracts"
    ]
    assert all("id" in contract for contract in contracts)
    assert {bad.contract for bad in BAD_IMPORTS} == set(CONTRACTS)


def test_the_code_as_it_is_keeps_every_contract(copy: Path) -> None:
    linted = lint_imports(copy)
    assert set(linted.verdicts.values()) == {"KEPT"}, linted.output


@pytest.mark.parametrize("bad", BAD_IMPORTS, ids=str)
def test_a_bad_import_breaks_its_contract_and_no_other(copy: Path, bad: BadImport) -> None:
    target = copy / bad.path
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("a") as module:
        module.write(f"\n{bad.line}\n")
    linted = lint_imports(copy)
    expected = {each: "BROKEN" if each == bad.contract else "KEPT" for each in CONTRACTS}
    assert linted.verdicts == expected, linted.output


def test_the_core_imports_no_library_but_the_standard_library_and_orjson() -> None:
    graph = grimp.build_graph("extender", include_external_packages=True, cache_dir=None)
    libraries = {
        imported
        for module in graph.find_descendants("extender.core")
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.split(".")[0] != "extender"
    }
    assert libraries - set(sys.stdlib_module_names) <= CORE_MAY_IMPORT
