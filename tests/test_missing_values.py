"""A measurement not recorded yet: the page says so once, in a sentence ({{ if ... }} blocks)."""

import pytest
from conftest import ROOT

import carpentry
from gpulesson.results import NOT_RECORDED

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
                                  "_episodes/08-pytorch.md", "setup.md"])
def test_pages_say_in_words_what_is_missing(page):
    """With the lesson's results (CPU runs, no GPU run yet), no value reads "not recorded yet"
    in the text: the sentences and tables say what is missing instead (alt texts, which
    describe what the figure shows then, aside)."""
    filled = carpentry.fill_placeholders((ROOT / page).read_text(encoding="utf-8"), ROOT)
    lines = [line for line in filled.splitlines()
             if NOT_RECORDED in line and not line.startswith(":alt:")]
    assert not lines, "\n".join(lines)
