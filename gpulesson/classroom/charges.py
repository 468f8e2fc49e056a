"""What a job costs in a cluster's allocation units (``lesson_site`` in ``_config.yml``): a CPU job
is charged ``core_hour_rate`` per core, a GPU job ``gpu_hour_rate`` per GPU, an hour; and what the
workshop's sessions cost a room (episode 2's answer, :func:`substitutions`): hours × count × rate,
used or not, written out ("20 × 6 × 4 × 1 SU = 480 SU").
"""

import math
from dataclasses import dataclass
from pathlib import Path

SECTION = "lesson_site"
KEYS = ("charge_unit", "core_hour_rate", "gpu_hour_rate")
LEARNERS = 20  # the room of episode 2's example
DAY_HOURS = 8  # a GPU session held for the whole workshop day


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


def number(value: float) -> str:
    """A rate or a cost as the page writes it: 480, 3,000, 0.5, 12.25."""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def sessions(config: Path) -> list[dict]:
    """The workshop's sessions (``lesson_schedule.sessions`` of the ``_config.yml`` ``config``)."""
    import yaml

    values = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
    return (values.get("lesson_schedule") or {}).get("sessions") or []


def substitutions(config: Path) -> dict[str, str]:
    """The ``site_cost_*`` values of the lesson whose ``_config.yml`` is ``config``."""
    rates = read_rates(config)
    by_label = {session.get("label"): session for session in reversed(sessions(config))}  # first wins
    cpu, gpu = by_label.get("CPU session"), by_label.get("GPU session")
    if not (cpu and gpu):
        return {}  # a lesson without the workshop's two sessions has no such answer
    unit = rates.unit

    def product(hours: int, count: int, rate: float, **what) -> tuple[str, float]:
        total = LEARNERS * allocation_cost(hours * 3600, rates, **what)
        return (f"{LEARNERS} × {hours} × {count} × {number(rate)} {unit} = "
                f"{number(total)} {unit}"), total

    cpu_text, _ = product(cpu["hours"], cpu["cores"], rates.core_hour, cores=cpu["cores"])
    gpu_text, gpu_total = product(gpu["hours"], gpu["gpus"], rates.gpu_hour, gpus=gpu["gpus"])
    day_text, day_total = product(DAY_HOURS, gpu["gpus"], rates.gpu_hour, gpus=gpu["gpus"])
    return {"site_cost_cpu_session": cpu_text, "site_cost_gpu_session": gpu_text,
            "site_cost_gpu_day": day_text,
            "site_cost_gpu_day_ratio": f"{day_total / gpu_total:.1f}" if gpu_total else "–"}
