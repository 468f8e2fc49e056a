"""Episodes 1 to 3: the learners' setup check opens the workshop, and episode 3's facts hold.

The schedule counts the 10-minute setup check inside episode 1's exercise minutes, so the check
must be episode 1's first exercise, timed 10 minutes, after the cells whose output it reads.
"""

import re

import core_check
from carpentry import split_front_matter
from conftest import ROOT

EPISODES = ROOT / "_episodes"


def _page(name: str):
    meta, body = split_front_matter((EPISODES / name).read_text(encoding="utf-8"))
    return meta, body, core_check.parse_body(body)


def test_episode_1_opens_with_the_setup_check_on_the_cells_it_reads():
    meta, body, page = _page("01-introduction.md")
    first = page.exercises[0]
    assert first.title == "Check your session (10 min)" and not first.optional
    assert first.objectives and first.has_solution
    assert int(meta["exercises"]) >= 10 + sum(
        int(re.search(r"\((\d+) min\)$", e.title)[1]) for e in page.exercises[1:] if not e.optional)
    before = body[:body.index("{exercise} Check your session")]
    code = "\n".join("\n".join(cell.lines) for cell in page.cells)
    for call in ("devices.report()", "get_settings()", "prepare(settings)"):
        assert call in code and call in before, call
    # Each point of the check has its fix in the solution.
    solution = "\n".join(first.solution)
    assert "Change Kernel" in solution and "gpulesson.prepare" in solution
    assert "No GPU visible" in solution


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
