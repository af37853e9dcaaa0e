"""Kubernetes resource quantities ("500m", "16Gi", "1e3") as integers.

CPU is counted in millicores, every other resource in its base unit (bytes, devices), both
rounded up the way the API server does (`Quantity.MilliValue()` / `Value()`).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from functools import lru_cache

# int64, as in the API server: anything larger cannot be a real request or capacity.
MAX_QUANTITY = 2**63 - 1

_SUFFIXES: dict[str, Decimal] = {
    "": Decimal(1),
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": Decimal("1e3"),
    "M": Decimal("1e6"),
    "G": Decimal("1e9"),
    "T": Decimal("1e12"),
    "P": Decimal("1e15"),
    "E": Decimal("1e18"),
    "Ki": Decimal(2**10),
    "Mi": Decimal(2**20),
    "Gi": Decimal(2**30),
    "Ti": Decimal(2**40),
    "Pi": Decimal(2**50),
    "Ei": Decimal(2**60),
}
_PATTERN = re.compile(
    r"^\+?([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]{1,3}|[numkMGTPE])?$"
)


# How people write bytes elsewhere (512GB, 4GiB, 100MB): told which quantity they meant.
_BYTES_SUFFIX = re.compile(r"^\+?([0-9.]+)\s*([kKMGTPE])(i?)[bB]$")


class QuantityError(ValueError):
    """A quantity that cannot be a real Kubernetes quantity; the message says why."""


def parse_quantity(value: object, *, milli: bool = False) -> int:
    """Parse a quantity to an integer (millis when `milli`), rounding up.

    Accepts the API's string form and bare JSON numbers. Raises QuantityError for text that is not
    a quantity, negative amounts and amounts beyond int64.
    """
    return _parse(_text(value), milli)


def exact_quantity(value: object) -> Decimal:
    """The quantity as written, unrounded (`"2500m"` is 2.5): to tell whole numbers from
    fractions. Raises QuantityError as `parse_quantity` does."""
    return _decimal(_text(value))


def _text(value: object) -> str:
    if isinstance(value, bool):  # as YAML spells it (the file said true, not True)
        raise QuantityError(f"{str(value).lower()} is not a quantity")
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if not isinstance(value, str):
        shown = "null (nothing)" if value is None else repr(value)
        raise QuantityError(f"{shown} is not a quantity (expected a string like '500m' or '4Gi')")
    return value


def _decimal(text: str) -> Decimal:
    stripped = text.strip()
    if stripped.startswith("-"):
        raise QuantityError(f"{text!r} is negative")
    match = _PATTERN.match(stripped)
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity{_meant(stripped)}")
    number, suffix = match.group(1), match.group(2) or ""
    try:
        if suffix in _SUFFIXES:
            return Decimal(number) * _SUFFIXES[suffix]
        return Decimal(number) * (Decimal(10) ** int(suffix[1:]))
    except (InvalidOperation, KeyError, OverflowError) as err:
        raise QuantityError(f"{text!r} is not a quantity") from err


def _meant(text: str) -> str:
    """What a quantity written with a byte suffix (`GB`, `GiB`) meant, for the error."""
    written = _BYTES_SUFFIX.match(text)
    if written is None or _PATTERN.match(written[1]) is None:
        return " (expected a number with an optional suffix: 500m, 4G, 16Gi)"
    number, letter, binary = written.groups()
    if binary:
        return f"; did you mean {number}{letter.upper()}i?"
    decimal = "k" if letter in "kK" else letter
    return f"; did you mean {number}{decimal} or {number}{letter.upper()}i?"


@lru_cache(maxsize=8192)
def _parse(text: str, milli: bool) -> int:
    amount = _decimal(text)
    if milli:
        amount *= 1000
    result = int(amount.to_integral_value(rounding="ROUND_CEILING"))
    if result > MAX_QUANTITY:
        raise QuantityError(f"{text!r} is larger than any real quantity (over 2^63)")
    return result


_BYTE_UNITS = [(suffix, int(factor)) for suffix, factor in _SUFFIXES.items() if factor >= 1000]


def format_amount(resource: str, amount: int) -> str:
    """Print an amount exactly, in the unit a user writes it in: `cpu` in cores (`1.5`), bytes
    (memory, storage, hugepages) in the shortest exact quantity of either family (`4G`, `16Gi`,
    `1.5Gi`, `10000Gi`), anything else as a count. Never in exponent notation, never rounded:
    what is printed reads back as the amount."""
    if resource == "cpu":
        return _plain(Decimal(amount) / 1000)
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        exact = [
            f"{_plain(Decimal(amount) / factor)}{suffix}"
            for suffix, factor in _BYTE_UNITS
            if amount >= factor and amount * 1000 % factor == 0  # exact to 3 decimals
        ]
        return min([*exact, str(amount)], key=len)
    return str(amount)


def _plain(number: Decimal) -> str:
    """A decimal without exponent or trailing zeros: `2`, `1.5`, `10000`."""
    text = f"{number:f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def format_age(seconds: float) -> str:
    """`45s`, `12m`, `3h`, `2d`, as kubectl shows ages (whole units, rounded down)."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f}{unit}"
    return f"{max(0.0, seconds):.0f}s"
