"""README.md, docs/*.md, policies/README.md: every relative link leads somewhere.

Links and headings are read with markdown-it (CommonMark, as GitHub renders it), so a `](x)` inside
a code block or inline code is not a link. Anchors are matched against GitHub's heading slugs.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [
    ROOT / "README.md",
    *sorted((ROOT / "docs").glob("*.md")),
    ROOT / "policies" / "README.md",
]
DOCUMENT_IDS = [str(path.relative_to(ROOT)) for path in DOCUMENTS]
README_MAX_LINES = 700

_markdown = MarkdownIt("commonmark").enable("table")


def _tokens(path: Path) -> Iterator[Token]:
    for token in _markdown.parse(path.read_text(encoding="utf-8")):
        yield token
        yield from token.children or ()


def _text(inline: Token) -> str:
    return "".join(
        child.content for child in inline.children or () if child.type in ("text", "code_inline")
    )


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a Markdown file, repeats numbered as GitHub numbers them."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    tokens = _markdown.parse(path.read_text(encoding="utf-8"))
    for opening, inline in pairwise(tokens):
        if opening.type != "heading_open":
            continue
        slug = github_slug(_text(inline))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def relative_links(path: Path) -> list[str]:
    """Targets of the links and images of a Markdown file that stay in the repository."""
    targets = []
    for token in _tokens(path):
        target = token.attrGet("href") if token.type == "link_open" else None
        if token.type == "image":
            target = token.attrGet("src")
        if isinstance(target, str) and not urlsplit(target).scheme and target:
            targets.append(target)
    return targets


def broken(path: Path, target: str) -> str | None:
    """Why a link of `path` leads nowhere, or None when it leads to a file (and heading)."""
    parts = urlsplit(target)
    file = (path.parent / unquote(parts.path)).resolve() if parts.path else path
    if not file.exists():
        return f"{target}: no file {file.relative_to(ROOT) if file.is_relative_to(ROOT) else file}"
    if parts.fragment and file.suffix == ".md" and parts.fragment not in anchors(file):
        return f"{target}: no heading of {file.relative_to(ROOT)} has the anchor #{parts.fragment}"
    return None


@pytest.mark.parametrize("document", DOCUMENTS, ids=DOCUMENT_IDS)
def test_every_relative_link_and_image_leads_to_a_file_and_heading_that_exist(
    document: Path,
) -> None:
    problems = [why for target in relative_links(document) if (why := broken(document, target))]
    assert problems == []


def test_the_readme_is_a_guide_under_700_lines() -> None:
    lines = len((ROOT / "README.md").read_text(encoding="utf-8").splitlines())
    assert lines < README_MAX_LINES, f"README.md has {lines} lines; dated figures go in docs/"


def test_the_readme_quotes_the_minimal_policy_as_the_file_has_it() -> None:
    minimal = (ROOT / "policies" / "minimal.yaml").read_text(encoding="utf-8")
    if minimal not in (ROOT / "README.md").read_text(encoding="utf-8"):
        pytest.fail("README.md does not quote policies/minimal.yaml as the file has it")


def test_every_policy_path_the_docs_name_is_the_one_the_deployment_mounts() -> None:
    deployment = yaml.safe_load((ROOT / "manifests" / "base" / "deployment.yaml").read_text())
    containers = deployment["spec"]["template"]["spec"]["containers"]
    flags = [arg for container in containers for arg in container.get("args", ())]
    (mounted,) = [flag.removeprefix("--policy=") for flag in flags if flag.startswith("--policy=")]
    texts = [*DOCUMENTS, *sorted((ROOT / "policies").glob("*.yaml"))]
    named = {
        f"{path.relative_to(ROOT)}: {found}"
        for path in texts
        for found in re.findall(r"/etc/gangplank[\w./-]*policy\.yaml", path.read_text())
        if found != mounted
    }
    assert named == set(), f"the Deployment reads {mounted}"


def test_a_heading_gets_githubs_anchor() -> None:
    assert (
        github_slug("Why a pod waits: gangplank why, kubectl gangplank")
        == "why-a-pod-waits-gangplank-why-kubectl-gangplank"
    )
    assert github_slug("Placement: topology, fragmentation") == "placement-topology-fragmentation"
