"""Kubernetes' name rules (`core/model/names.py`), as its API server validates them."""

from __future__ import annotations

import pytest

from extender.core.model.names import DNS_LABEL, DNS_SUBDOMAIN


@pytest.mark.parametrize("name", ["n1", "gpu-a1.example.com", "a", "x" * 253, "1-2.3"])
def test_a_node_name_is_a_dns_subdomain(name: str) -> None:
    assert DNS_SUBDOMAIN.fullmatch(name)


@pytest.mark.parametrize(
    "name", ["", "A", "a b", "a/b", "../etc", "-x", "x-", ".a", "a..b", "a.-b", "x" * 254, "a\n"]
)
def test_what_is_not_a_dns_subdomain(name: str) -> None:
    assert not DNS_SUBDOMAIN.fullmatch(name)


def test_a_namespace_is_a_label_of_at_most_63_characters_without_dots() -> None:
    assert DNS_LABEL.fullmatch("team-a") and DNS_LABEL.fullmatch("x" * 63)
    assert not DNS_LABEL.fullmatch("x" * 64)
    assert not DNS_LABEL.fullmatch("team.a")
