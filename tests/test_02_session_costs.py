"""Episode 2's session costs: the products and totals its answer shows, from the site's rates and
the workshop's sessions in _config.yml (gpulesson.classroom.charges), never typed."""

import yaml
from carpentry import fill_placeholders, site_values
from conftest import ROOT

from gpulesson.classroom import charges as costs

EPISODE = ROOT / "_episodes" / "02-connecting.md"


def test_the_answer_multiplies_out_the_lessons_sessions_at_its_rates():
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    site = config["lesson_site"]
    cpu, gpu = config["lesson_schedule"]["sessions"]
    unit, core, gpu_rate = site["charge_unit"], site["core_hour_rate"], site["gpu_hour_rate"]
    values = costs.substitutions(ROOT / "_config.yml")
    cpu_total = costs.LEARNERS * cpu["hours"] * cpu["cores"] * core
    gpu_total = costs.LEARNERS * gpu["hours"] * gpu["gpus"] * gpu_rate
    day_total = costs.LEARNERS * costs.DAY_HOURS * gpu["gpus"] * gpu_rate
    assert values == {
        "site_cost_cpu_session": f"20 × {cpu['hours']} × {cpu['cores']} × {core} {unit} = "
                                f"{cpu_total:,} {unit}",
        "site_cost_gpu_session": f"20 × {gpu['hours']} × {gpu['gpus']} × {gpu_rate} {unit} = "
                                f"{gpu_total:,} {unit}",
        "site_cost_gpu_day": f"20 × 8 × {gpu['gpus']} × {gpu_rate} {unit} = {day_total:,} {unit}",
        "site_cost_gpu_day_ratio": f"{day_total / gpu_total:.1f}"}
    # The page's room and day are the module's: the question's bullets name them.
    text = " ".join(EPISODE.read_text(encoding="utf-8").split())
    assert f"{costs.LEARNERS} learners × {costs.DAY_HOURS} hours × 1 GPU" in text


def test_the_totals_follow_a_sites_own_rates(tmp_path):
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    config["lesson_site"].update(charge_unit="credits", core_hour_rate=0.5, gpu_hour_rate=12.25)
    path = tmp_path / "_config.yml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    values = costs.substitutions(path)
    assert values["site_cost_cpu_session"] == "20 × 6 × 4 × 0.5 credits = 240 credits"
    assert values["site_cost_gpu_session"] == "20 × 4 × 1 × 12.25 credits = 980 credits"
    assert values["site_cost_gpu_day"] == "20 × 8 × 1 × 12.25 credits = 1,960 credits"


def test_episode_2s_answer_gives_the_totals():
    """The question asks what 20 learners pay: the answer gives the products and their totals."""
    text = EPISODE.read_text(encoding="utf-8")
    start = text.index("In the debrief, the cost")
    answer = text[start:text.index(":::", start)]
    values = site_values(ROOT)
    filled = " ".join(fill_placeholders(answer, ROOT).split())
    for name in ("cpu_session", "gpu_session", "gpu_day"):
        assert values[f"site_cost_{name}"] in filled
        assert " = " in values[f"site_cost_{name}"]
