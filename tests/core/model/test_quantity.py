"""Quantities are read as the API server reads them, and nonsense is refused."""

from __future__ import annotations

import re

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


AMOUNTS = [
    ("cpu", 1500, "1.5", "cpu in cores"),
    ("cpu", 2000, "2", "whole cores without a fraction"),
    ("cpu", 123_456_789, "123456.789", "many cores, exactly and without an exponent"),
    ("memory", 16 * 2**30, "16Gi", "a binary amount in its binary unit"),
    ("memory", 4 * 10**9, "4G", "a decimal amount in its decimal unit (not 3.725Gi)"),
    ("memory", 10_000 * 2**30, "10000Gi", "a large amount without an exponent (not 1e+04Gi)"),
    ("memory", 3 * 2**29, "1.5Gi", "an exact fraction of a binary unit"),
    ("memory", 2**30 + 1, "1073741825", "an amount no unit divides, in bytes"),
    ("memory", 512, "512", "bytes"),
    ("ephemeral-storage", 2 * 10**12, "2T", "storage as memory is"),
    ("nvidia.com/gpu", 8, "8", "devices as a count"),
]


@pytest.mark.parametrize(
    "resource,amount,text",
    [a[:3] for a in AMOUNTS],
    ids=[f"{a[3]}: {a[2]}" for a in AMOUNTS],
)
def test_amounts_print_exactly_in_the_unit_users_write(
    resource: str, amount: int, text: str
) -> None:
    assert format_amount(resource, amount) == text
    if resource != "cpu":
        assert parse_quantity(text) == amount, "what is printed reads back as the amount"


MEANT = [
    ("512GB", "did you mean 512G or 512Gi?"),
    ("100MB", "did you mean 100M or 100Mi?"),
    ("2KB", "did you mean 2k or 2Ki?"),
    ("1.5TB", "did you mean 1.5T or 1.5Ti?"),
    ("4GiB", "did you mean 4Gi?"),
]


@pytest.mark.parametrize(
    "text,hint", MEANT, ids=[f"{t!r} is refused with what it meant" for t, _ in MEANT]
)
def test_bytes_written_with_a_b_are_refused_with_the_quantity_meant(text: str, hint: str) -> None:
    with pytest.raises(QuantityError, match=re.escape(f"'{text}' is not a quantity; {hint}")):
        parse_quantity(text)
