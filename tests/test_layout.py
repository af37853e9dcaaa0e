"""The tests mirror the packages: every module of the core (found by walking `extender.core`, so
a new one is caught the day it is added) is imported by a test of its own package's directory —
`extender.core.gangs.hold` by a file under tests/core/gangs/, `extender.core.engine` by one
directly under tests/core/ — and every test directory is a package."""

from __future__ import annotations

import ast
import pkgutil
from functools import cache
from pathlib import Path

import pytest

import extender.core

TESTS = Path(__file__).resolve().parent
CORE_MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(extender.core.__path__, "extender.core.")
    if not info.ispkg
)


def mirror_of(module: str) -> Path:
    """tests/core/<package>/ for `extender.core.<package>.<module>`, tests/core/ for a module of
    the core itself."""
    return TESTS.joinpath("core", *module.split(".")[2:-1])


@cache
def imported_by(test_file: Path) -> frozenset[str]:
    """The modules a test file imports: `import m`, `from m import x`, and `from p import m`."""
    found: set[str] = set()
    for statement in ast.walk(ast.parse(test_file.read_text(encoding="utf-8"))):
        if isinstance(statement, ast.Import):
            found.update(alias.name for alias in statement.names)
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            found.add(statement.module)
            found.update(f"{statement.module}.{alias.name}" for alias in statement.names)
    return frozenset(found)


def test_the_core_is_found_by_walking_it() -> None:
    assert "extender.core.engine" in CORE_MODULES
    assert "extender.core.gangs.hold" in CORE_MODULES
    assert mirror_of("extender.core.gangs.hold") == TESTS / "core" / "gangs"
    assert mirror_of("extender.core.engine") == TESTS / "core"


@pytest.mark.parametrize("module", CORE_MODULES)
def test_every_core_module_is_imported_by_a_test_of_its_package(module: str) -> None:
    where = mirror_of(module)
    importers = [f.name for f in sorted(where.glob("test_*.py")) if module in imported_by(f)]
    assert importers, (
        f"{module}: no test under {where.relative_to(TESTS.parent)}/ imports it "
        f"(`from {module} import ...`)"
    )


def test_every_test_directory_is_a_package() -> None:
    """Without __init__.py, two test files of one name in two directories would collide."""
    directories = {f.parent for f in TESTS.rglob("test_*.py")}
    assert (
        sorted(
            str(d.relative_to(TESTS.parent))
            for d in directories
            if not (d / "__init__.py").exists()
        )
        == []
    )
