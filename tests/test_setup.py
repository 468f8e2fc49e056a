"""The setup page says what the lesson's files do: the variables its table lists, the button and
the sessions of the lesson's Open OnDemand app, and the shared environment a site may provide."""

import re

from conftest import ROOT

SETUP = ROOT / "setup.md"
NUMBERS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def text() -> str:
    return SETUP.read_text(encoding="utf-8")


def test_the_count_of_the_data_variables_is_the_tables():
    page = text()
    match = re.search(r"^(\w+) environment variables control", page, re.M)
    assert match, "the sentence before the variables' table"
    table = page[match.end():].split("\n\n")[1]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    assert NUMBERS[match[1].lower()] == len(rows), (match[1], rows)


def test_the_connect_button_is_the_apps():
    button = re.search(r"</i>\s*(.*?)\s*</button>",
                       (ROOT / "ood" / "gpulesson-jupyterlab" / "view.html.erb").read_text(), re.S)[1]
    page = " ".join(text().split())
    assert f"Click **{button}**" in page
    episode = " ".join((ROOT / "_episodes" / "02-connecting.md").read_text(encoding="utf-8").split())
    assert f"**{button}**" in episode


def test_route_a_starts_in_the_cpu_session_and_moves_to_the_gpu_session():
    route = " ".join(text().split("- **Route B")[0].split("- **Route A")[1].split())
    assert "on a GPU node" not in route
    assert "CPU session for episodes 1 to 4" in route and "GPU session for episode 5" in route


def test_a_shared_environment_is_activated_by_its_folder_instead_of_created():
    page = " ".join(text().split())
    assert "skip `conda env create`: activate the one they name instead" in page
    assert "conda activate /path/to/shared/env" in page
