"""Pages that name episodes by number name the right ones."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EPISODES = ROOT / "_episodes"


def _titles() -> dict[int, str]:
    titles = {}
    for path in sorted(EPISODES.glob("[0-9][0-9]-*.md")):
        match = re.search(r'^title:\s*"(.+)"', path.read_text(), re.M)
        titles[int(path.name[:2])] = match.group(1).lower()
    return titles


def test_further_reading_rows_name_the_episodes_they_number():
    text = (EPISODES / "11-next-steps.md").read_text()
    table = text[text.index("## Further reading"):]
    rows = re.findall(r"^\| (\d+)\. ([^|]+?) \|", table, re.M)
    titles = _titles()
    numbered = [int(n) for n, _ in rows]
    assert numbered == sorted(t for t in titles if t != 11), numbered
    wrong = [(n, name) for n, name in rows
             if not all(word in titles[int(n)] for word in name.lower().split())]
    assert not wrong, f"rows whose name is not in the episode's title: {wrong}"
