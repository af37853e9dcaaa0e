"""Quantities are read as the API server reads them, and nonsense is refused."""

from __future__ import annotations

import pytest

from extender.core.model.quantity import QuantityError, format_amount, parse_quantity

GOOD = [
    ("500m", True, 500),
    ("2", True, 2000),
    ("0.5", True, 500),
    ("1.0001", True, 1001),
    ("100u", True, 1),
    ("16Gi", False, 16 * 2**30),
    ("1G", False, 10**9),
    ("1e3", False, 1000),
    ("1.5Ki", False, 1536),
    ("8", False, 8),
    (4, False, 4),
    (0.25, True, 250),
    ("+3", False, 3),
]


@pytest.mark.parametrize(
    "text,milli,expected", GOOD, ids=[f"{t!r} reads as {e}" for t, _, e in GOOD]
)
def test_quantity_reads_like_the_api_server(text: object, milli: bool, expected: int) -> None:
    assert parse_quantity(text, milli=milli) == expected


BAD = ["-1", "1e999", "9Ei" * 1 + "0", "lots", "", "1.2.3", "1Zi", None, True, [1], "99999999Ei"]


@pytest.mark.parametrize("text", BAD, ids=[f"{t!r} is refused" for t in BAD])
def test_nonsense_quantities_are_refused(text: object) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text, milli=True)


def test_amounts_print_in_the_unit_users_write() -> None:
    assert format_amount("cpu", 1500) == "1.5"
    assert format_amount("cpu", 2000) == "2"
    assert format_amount("memory", 16 * 2**30) == "16Gi"
    assert format_amount("nvidia.com/gpu", 8) == "8"
