"""Episodes 1 to 3: the learners' setup check opens the workshop, and episode 3's facts hold.

The schedule gives the setup check its own slot before episode 1 (``lesson_schedule.setup_check``
in ``_config.yml``), so the check is a checklist, not an exercise counted in episode 1's minutes,
and it comes right after the cells whose output it reads, gpulesson.check's learner part last.
"""

import re

import core_check
from carpentry import schedule_setup_check, split_front_matter
from conftest import ROOT

EPISODES = ROOT / "_episodes"


def _page(name: str):
    meta, body = split_front_matter((EPISODES / name).read_text(encoding="utf-8"))
    return meta, body, core_check.parse_body(body)


def test_episode_1_opens_with_the_setup_check_on_the_cells_it_reads():
    assert schedule_setup_check(ROOT) >= 10
    _, body, page = _page("01-introduction.md")
    first_section = body[body.index("## Setup check"):body.index("\n## ", body.index("## Setup check") + 1)]
    assert first_section.index("{checklist}") < first_section.index("{exercise}")
    before = first_section[:first_section.index("{checklist}")]
    # The same checks as the instructor's readiness check, for what applies to a learner.
    for call in ("devices.report()", "get_settings()", "prepare(settings)", "learner_checks()"):
        assert call in before, call
    assert body.index("## Setup check") < min(body.index(f"```{{code-cell}}"), body.index("{exercise}"))
    assert not any("session work" in e.title for e in page.exercises)
    # Each point of the check has its fix in the solution.
    fixes = first_section[first_section.index("{solution} If a point fails"):]
    assert "Change Kernel" in fixes and "gpulesson.prepare" in fixes and "No GPU visible" in fixes


def test_every_code_cell_of_episodes_1_and_3_is_given_or_prompted():
    for name in ("01-introduction.md", "03-environments.md"):
        _, body, _ = _page(name)
        for cell in re.findall(r"^```\{code-cell\}[^\n]*\n((?::[\w-]+:.*\n)*)", body, re.M):
            assert ":prompt:" in cell or re.search(r":tags:.*\bgiven\b", cell), (name, cell)


def test_episode_3_says_sbatch_passes_the_environment_and_why_scripts_load_modules():
    _, body, _ = _page("03-environments.md")
    text = " ".join(body.split())
    assert "--export=ALL" in text and "loaded modules included" in text
    assert "a batch job starts without" not in text and "batch script must load it itself" not in text
