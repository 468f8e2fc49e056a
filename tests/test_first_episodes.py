"""Episodes 1 to 3: the learners' setup check opens the workshop, and episode 3's facts hold.

The schedule gives the setup check its own slot before episode 1 (``lesson_schedule.setup_check``
in ``_config.yml``), so the check is a checklist, not an exercise counted in episode 1's minutes,
and it comes right after the cells whose output it reads, gpulesson.check's learner part last.
"""

import re

import core_check
from carpentry import schedule_sessions, schedule_setup_check, split_front_matter
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


def test_episode_2_teaches_the_sessions_the_workshop_runs_and_their_cost():
    sessions = {s.label: s for s in schedule_sessions(ROOT)}
    cpu, gpu = sessions["CPU session"], sessions["GPU session"]
    _, body, page = _page("02-connecting.md")
    text = " ".join(body.split())
    # The form's table: one column per session, the values of lesson_schedule.sessions.
    assert (f"| Number of hours | {cpu.hours} | {gpu.hours} |" in text
            and f"| Cores | {cpu.cores} | {gpu.cores} |" in text
            and f"| Memory (GB) | {cpu.memory_gb} | {gpu.memory_gb} |" in text
            and f"| Number of GPUs | {cpu.gpus} | {gpu.gpus} |" in text)
    assert f"`--time={gpu.hours:02d}:00:00`" in text
    # The exercise checks the CPU session that learners have, and its solution the time limit.
    check = next(e for e in page.exercises if e.title.startswith("Find your session"))
    question, solution = " ".join(check.question), " ".join(check.solution)
    assert f"CPU session's request ({cpu.hours} hours, {cpu.cores} cores, {cpu.memory_gb} GB, no GPU)" \
        in question
    assert f"a time limit of `{cpu.hours}:00:00`" in solution and "3:00:00" not in solution
    # The cost example: learners x hours x rate, for each session.
    for hours in (cpu.hours, gpu.hours):
        assert f"20 learners × {hours} hours ×" in text
    assert f"20 × {gpu.hours} × {{{{ site_gpu_hour_rate }}}}" in solution
    # The batch script and srun ask for the lesson's memory.
    assert "--mem=16G" not in body and f"#SBATCH --mem={gpu.memory_gb}G" in body
    # The setup page names the same two requests.
    setup = " ".join((ROOT / "setup.md").read_text(encoding="utf-8").split())
    assert f"{cpu.memory_gb} GB and {cpu.hours} hours" in setup
    assert f"{gpu.memory_gb} GB and {gpu.hours} hours" in setup
