"""Kubernetes resource quantities ("500m", "2", "1Gi"): parsing, scaling, canonical formatting."""

from __future__ import annotations

import re
from decimal import ROUND_CEILING, Decimal

_SUFFIXES: dict[str, Decimal] = {
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": Decimal(1),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "P": Decimal(10) ** 15,
    "E": Decimal(10) ** 18,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
    "Pi": Decimal(2) ** 50,
    "Ei": Decimal(2) ** 60,
}
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$"
_QUANTITY = re.compile(QUANTITY_PATTERN)


def parse_quantity(text: str) -> Decimal:
    """The value of a quantity in base units (cores or bytes)."""
    match = _QUANTITY.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a Kubernetes quantity such as '500m', '2' or '1Gi'")
    suffix = match.group(2) or ""
    return Decimal(text[: len(text) - len(suffix)]) * _SUFFIXES[suffix]


def format_cpu(cores: Decimal) -> str:
    """Whole cores as an integer, anything else in millicores, as kubectl prints them."""
    if cores == cores.to_integral_value():
        return str(int(cores))
    return f"{int((cores * 1000).to_integral_value())}m"


def format_memory(size: Decimal) -> str:
    """The largest binary suffix that keeps the value integral."""
    for suffix in ("Ei", "Pi", "Ti", "Gi", "Mi", "Ki"):
        scaled = size / _SUFFIXES[suffix]
        if scaled >= 1 and scaled == scaled.to_integral_value():
            return f"{int(scaled)}{suffix}"
    return str(int(size.to_integral_value()))


def memory_mebibytes(size: Decimal) -> int:
    """Whole MiB, rounded up: the unit Spark's memory settings take."""
    return int((size / _SUFFIXES["Mi"]).to_integral_value(rounding=ROUND_CEILING))
