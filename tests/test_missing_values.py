"""A measurement not recorded yet: the page says so once, in a sentence ({{ if ... }} blocks)."""

import re

import carpentry
import pytest
from conftest import ROOT

from gpulesson.records.results import NOT_RECORDED

VALUES = {"ref_cpu": "2.0 s", "ref_gpu": NOT_RECORDED, "ref_both": f"{NOT_RECORDED} ({NOT_RECORDED})"}


def fill(text):
    return carpentry.fill_placeholders(text, ROOT, VALUES)


def test_the_missing_text_is_the_one_the_results_modules_write():
    assert carpentry.MISSING == NOT_RECORDED


@pytest.mark.parametrize("text, expected", [
    ("CPU {{ if ref_cpu }}took {{ ref_cpu }}{{ else }}-{{ endif }}.", "CPU took 2.0 s."),
    ("GPU {{ if ref_gpu }}took {{ ref_gpu }}{{ else }}not run yet{{ endif }}.", "GPU not run yet."),
    ("Both{{ if ref_cpu ref_gpu }}: {{ ref_cpu }}{{ endif }}.", "Both."),
    ("{{ if ref_both }}x{{ else }}a value made of missing ones is missing{{ endif }}",
     "a value made of missing ones is missing"),
    ("{{ if ref_cpu }}\n| a | b |\n{{ else }}\nNo table.\n{{ endif }}\nAfter", "\n| a | b |\n\nAfter"),
])
def test_a_block_keeps_the_part_that_applies(text, expected):
    assert fill(text) == expected


@pytest.mark.parametrize("text, message", [
    ("{{ if ref_nothing }}x{{ endif }}", "unknown placeholder(s) ref_nothing"),
    ("{{ if ref_cpu }}x", "without its block"),
    ("x{{ endif }}", "without its block"),
    ("{{ if ref_cpu }}{{ if ref_gpu }}x{{ endif }}{{ else }}y{{ endif }}", "not nested"),
])
def test_a_broken_block_is_an_error_that_says_how_to_write_it(text, message):
    with pytest.raises(carpentry.PlaceholderError, match=message.replace("(", r"\(").replace(")", r"\)")):
        fill(text)


@pytest.mark.parametrize("page", ["_episodes/06-why-gpus-are-fast.md", "_episodes/07-small-models.md",
                                  "_episodes/08-pytorch.md", "_episodes/09-feeding-the-gpu.md",
                                  "_episodes/10-beyond-one-gpu.md", "setup.md"])
def test_pages_say_in_words_what_is_missing(page):
    """With the lesson's results (CPU runs, no GPU run yet), no value reads "not recorded yet"
    in the text: the sentences and tables say what is missing instead (alt texts, which
    describe what the figure shows then, aside)."""
    filled = carpentry.fill_placeholders((ROOT / page).read_text(encoding="utf-8"), ROOT)
    lines = [line for line in filled.splitlines()
             if NOT_RECORDED in line and not line.startswith(":alt:")]
    assert not lines, "\n".join(lines)


# --- a page without GPU records says so once, in one note ------------------------------------

GPU_PAGES = ["_episodes/06-why-gpus-are-fast.md", "_episodes/07-small-models.md",
             "_episodes/08-pytorch.md", "_episodes/09-feeding-the-gpu.md"]
# What a page says of a measurement it lacks, in its own text (code cells and their outputs,
# which print the learner's run, aside).
SAYS_MISSING = re.compile(r"recorded\s+yet|not\s+yet\s+recorded|no\s+GPU\s+(?:run|sweep)\s+recorded|"
                          r"no\s+GPU\s+run\s+to\s+compare|not\s+measurable", re.I)
# Values that state their own goal's or table's status, met, not met or not recorded yet, each
# with the command that records it (episode 9's stream goals, chunk table, Grain's stream and the
# ladder's rungs and goals): set aside, like code cells.
OWN_STATUS = ("ref_feed_stream", "ref_ceil_stream", "ref_feed_chunks", "ref_ceil_grain",
              "ref_ladder_goals", "ref_ladder_rungs")
CODE_CELL = re.compile(r"^```\{code-cell\}.*?^```$", re.S | re.M)
ALT = re.compile(r"^:alt:.*$", re.M)
NOTE = re.compile(r"^:::\{note\}\n(.*?)^:::$", re.S | re.M)


def missing_notes(text: str) -> list[str]:
    """The notes of ``text`` that say what is missing; fails where the text says it elsewhere
    (alt texts, which describe what the figure shows, aside)."""
    text = ALT.sub("", CODE_CELL.sub("", text))
    notes = [n for n in NOTE.findall(text) if SAYS_MISSING.search(n)]
    outside = NOTE.sub("", text)
    assert not SAYS_MISSING.search(outside), \
        outside[max(0, SAYS_MISSING.search(outside).start() - 200):][:400]
    return notes


def own_status_aside(values: dict) -> dict:
    """``values`` without :data:`OWN_STATUS`; each of those that says a record is missing names
    the command that records it."""
    for key in OWN_STATUS:
        if SAYS_MISSING.search(values[key]) or "record yet" in values[key]:
            assert "python -m gpulesson.experiments." in values[key], f"{key}: {values[key]}"
    return {k: "" if k in OWN_STATUS else v for k, v in values.items()}


def with_gpu(values: dict, *prefixes: str) -> dict:
    """``values`` with every missing value that starts with one of ``prefixes`` made up."""
    return {k: ("1.0 s (made up)" if not carpentry.is_recorded(v) and k.startswith(prefixes)
                else v) for k, v in values.items()}


@pytest.fixture(scope="module")
def lesson_values():
    return carpentry.placeholder_values(ROOT)


@pytest.mark.parametrize("page", GPU_PAGES)
def test_a_page_says_once_in_one_note_what_is_not_recorded(page, lesson_values):
    text = (ROOT / page).read_text(encoding="utf-8")
    values = {k: NOT_RECORDED if k.startswith(("ref_mm_gpu", "ref_mlp_gpu", "ref_mlp_sweep_gpu",
                                                "ref_torch_gpu", "ref_feed_gpu", "ref_ceil_gpu",
                                                "ref_workers_gpu"))
              else v for k, v in own_status_aside(lesson_values).items()}
    notes = missing_notes(carpentry.fill_placeholders(text, ROOT, values))
    assert len(notes) == 1, notes
    assert "python -m gpulesson.experiments." in notes[0] and "lease" in notes[0]
    # Once every value is recorded, the note goes, and nothing else says a value is missing.
    assert missing_notes(carpentry.fill_placeholders(text, ROOT, with_gpu(values, "ref_"))) == []


# The values of each GPU run that a page shows.
COMPARISON, SWEEP = ("ref_mlp_gpu", "ref_mlp_speedup"), ("ref_mlp_sweep_",)


@pytest.mark.parametrize("page, recorded, missing, says", [
    ("_episodes/07-small-models.md", COMPARISON, "ref_mlp_sweep_gpu", "half of the sweep"),
    ("_episodes/07-small-models.md", SWEEP, "ref_mlp_gpu", "run of the comparison"),
    ("_episodes/09-feeding-the-gpu.md", ("ref_feed_gpu",), "ref_ceil_gpu", "ceiling on a GPU"),
    ("_episodes/09-feeding-the-gpu.md", ("ref_ceil_gpu",), "ref_feed_gpu", "feeding benchmark"),
])
def test_a_note_names_only_what_is_still_missing(page, recorded, missing, says, lesson_values):
    """Two runs fill one page: with one recorded, the one note names only the other."""
    values = {k: NOT_RECORDED if k.startswith(missing) else v
              for k, v in own_status_aside(lesson_values).items()}
    values = with_gpu(values, *recorded)
    filled = carpentry.fill_placeholders((ROOT / page).read_text(encoding="utf-8"), ROOT, values)
    notes = missing_notes(filled)
    assert len(notes) == 1 and says in notes[0], notes
    other = {"half of the sweep": "run of the comparison", "run of the comparison": "half of the sweep",
             "ceiling on a GPU": "feeding benchmark", "feeding benchmark": "ceiling on a GPU"}[says]
    assert other not in notes[0]
