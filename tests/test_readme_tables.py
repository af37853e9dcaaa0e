"""The README's tables say what the code and the manifests do: every `gangplank serve` flag is in
the configuration table and the table names no other; the account of gangplank's rights names
every resource its roles grant."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import yaml

from extender.service.settings import add_serve_arguments

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The README's text from the heading `title` to the next heading."""
    found = re.search(rf"^#+ {re.escape(title)}\n(.*?)(?=^#)", README, re.M | re.S)
    assert found, f"README.md has no section {title!r}"
    return found[1]


def serve_flags() -> set[str]:
    parser = argparse.ArgumentParser()
    add_serve_arguments(parser, {})
    return {
        flag
        for action in parser._actions
        if action.help != argparse.SUPPRESS
        for flag in action.option_strings
        if flag.startswith("--") and flag != "--help"
    }


def test_the_configuration_table_has_every_serve_flag_and_no_other() -> None:
    rows = [line for line in section("Configuration").splitlines() if line.startswith("| `--")]
    listed = [flag for row in rows for flag in re.findall(r"`(--[a-z0-9-]+)`", row.split("|")[1])]
    documented = set(listed)
    assert sorted(serve_flags() - documented) == [], "flags missing from README's table"
    assert sorted(documented - serve_flags()) == [], "flags in README's table that do not exist"
    # one row a flag: two rows said two defaults for --requeue-configmap, one of them wrong
    assert sorted({f for f in listed if listed.count(f) > 1}) == [], "flags in two rows"


def test_the_readme_names_every_resource_gangplanks_roles_grant() -> None:
    (row,) = [line for line in section("Deploy").splitlines() if "rbac-extender.yaml" in line]
    granted = {
        resource
        for obj in yaml.safe_load_all((ROOT / "manifests/base/rbac-extender.yaml").read_text())
        if obj and obj["kind"] in ("ClusterRole", "Role")
        for rule in obj["rules"]
        for resource in rule["resources"]
    }
    told = row.lower()
    assert sorted(r for r in granted if r.rstrip("s") not in told) == []
