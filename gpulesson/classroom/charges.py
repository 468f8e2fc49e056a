"""What a job costs in a cluster's allocation units (``lesson_site`` in ``_config.yml``): a CPU job
is charged ``core_hour_rate`` per core, a GPU job ``gpu_hour_rate`` per GPU, an hour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

SECTION = "lesson_site"
KEYS = ("charge_unit", "core_hour_rate", "gpu_hour_rate")


class ChargeRatesError(ValueError):
    """The site's charging rates are missing or not numbers; the message says what to set."""


@dataclass(frozen=True)
class Rates:
    """A site's charging rates (see the module docstring)."""

    unit: str
    core_hour: float
    gpu_hour: float
    note: str = ""


def _rate(value, key: str, config: Path) -> float:
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise ChargeRatesError(f"{key} in the {SECTION} section of {config} is {value!r}, not a "
                               "number: set it to the units your site charges per hour") from None
    if rate < 0 or math.isnan(rate) or math.isinf(rate):
        raise ChargeRatesError(f"{key} in the {SECTION} section of {config} is {value!r}: "
                               "give a rate of zero or more")
    return rate


def read_rates(config: Path) -> Rates:
    """The charging rates of the ``lesson_site`` section of the ``_config.yml`` ``config``."""
    import yaml

    config = Path(config)
    if not config.is_file():
        raise ChargeRatesError(f"no site configuration {config}: the charging rates are set in "
                               f"its {SECTION} section")
    section = (yaml.safe_load(config.read_text(encoding="utf-8")) or {}).get(SECTION) or {}
    missing = [key for key in KEYS if section.get(key) in (None, "")]
    if missing:
        raise ChargeRatesError(f"the {SECTION} section of {config} lacks {', '.join(missing)}: "
                               "set your site's charging unit and rates there")
    return Rates(unit=str(section["charge_unit"]),
                 core_hour=_rate(section["core_hour_rate"], "core_hour_rate", config),
                 gpu_hour=_rate(section["gpu_hour_rate"], "gpu_hour_rate", config),
                 note=str(section.get("charge_note") or ""))


def allocation_cost(seconds: float, rates: Rates, *, cores: int = 0, gpus: int = 0) -> float:
    """The units a job of ``seconds`` is charged: by its GPU-hours, else by its core-hours."""
    if seconds < 0 or math.isnan(seconds):
        raise ValueError(f"a job cannot take {seconds} seconds")
    if cores < 0 or gpus < 0 or (cores == 0 and gpus == 0):
        raise ValueError(f"a job needs cores or GPUs to be charged for, not cores={cores}, "
                         f"gpus={gpus}")
    hours = seconds / 3600
    if gpus:
        return hours * gpus * rates.gpu_hour
    return hours * cores * rates.core_hour
