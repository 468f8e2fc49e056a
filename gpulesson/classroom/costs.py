"""What the workshop's sessions cost a room at the site's rates (episode 2's answer): hours × count
× rate, used or not, written out ("20 × 6 × 4 × 1 SU = 480 SU")."""

from __future__ import annotations

from pathlib import Path

from gpulesson.classroom.charges import allocation_cost, read_rates

LEARNERS = 20  # the room of episode 2's example
DAY_HOURS = 8  # a GPU session held for the whole workshop day


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
