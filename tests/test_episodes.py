"""Episode files: names, front matter (Carpentries schema), order, figures and their alt text."""

import re

import pytest
import yaml
from carpentry import (
    EPISODE_DIR,
    Break,
    Episode,
    FrontMatterError,
    Session,
    SetupCheck,
    Slot,
    check_schema,
    has_title_heading,
    placeholder_values,
    read_episode,
    resolve_conditionals,
    schedule_markdown,
    schedule_parts,
    split_front_matter,
    toc_episode_paths,
)
from conftest import ROOT

EPISODE_FILES = sorted((ROOT / EPISODE_DIR).glob("*.md"))
GOOD = {"title": "T", "teaching": 10, "exercises": 5, "questions": ["q?"],
        "objectives": ["o"], "keypoints": ["k"]}


def test_there_are_episodes():
    assert EPISODE_FILES


@pytest.mark.parametrize("path", EPISODE_FILES, ids=lambda p: p.name)
def test_episode_name_and_front_matter(path):
    assert re.fullmatch(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*\.md", path.name), path.name
    episode = read_episode(ROOT, path.relative_to(ROOT))  # raises on a schema problem
    body = split_front_matter(path.read_text(encoding="utf-8"))[1]
    assert not has_title_heading(body), "the title comes from the front matter, not a '# ' heading"
    assert episode.minutes > 0


def test_toc_lists_every_episode_in_number_order():
    listed = toc_episode_paths(ROOT)
    assert listed == [p.relative_to(ROOT).as_posix() for p in EPISODE_FILES]
    numbers = [int(p.name[:2]) for p in EPISODE_FILES]
    assert numbers == list(range(1, len(numbers) + 1)), "episodes are numbered 01, 02, ... without gaps"


@pytest.mark.parametrize("change, problem", [
    ({"teaching": "20"}, "'teaching' must be int"),
    ({"teaching": True}, "'teaching' must be int"),
    ({"exercises": -5}, "must not be negative"),
    ({"questions": []}, "'questions' must be a non-empty list"),
    ({"keypoints": ["ok", 3]}, "'keypoints' must be a non-empty list of strings"),
    ({"objectives": "a string"}, "'objectives' must be list"),
    ({"title": "  "}, "'title' must not be empty"),
])
def test_schema_check_names_the_problem(change, problem):
    assert check_schema(GOOD) == []
    problems = check_schema({**GOOD, **change})
    assert any(problem in p for p in problems), problems


def test_missing_keys_and_front_matter_are_reported(tmp_path):
    assert check_schema({"title": "T"}) == [f"missing key '{k}'" for k in
                                            ("teaching", "exercises", "questions", "objectives", "keypoints")]
    (tmp_path / "99-x.md").write_text("# No front matter\n")
    with pytest.raises(FrontMatterError, match="99-x.md: no YAML front matter"):
        read_episode(tmp_path, "99-x.md")


def test_title_heading_detection_ignores_code():
    assert has_title_heading("text\n# Title\n")
    assert not has_title_heading("## Section\n```{code-cell} ipython3\n# a comment\n```\n")


def test_schedule_adds_up():
    parts = schedule_parts(ROOT)
    schedule = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_schedule"]
    breaks, inner = schedule["breaks"], schedule.get("breaks_inside") or {}
    back = schedule.get("break_return", 0)  # the core's breaks: the rest and the way back
    assert [ep.path.as_posix() for part in parts for ep in part.episodes] == toc_episode_paths(ROOT)
    for n, part in enumerate(parts):
        assert part.rows[0][0] == "0:00"
        back_here = back if n == 0 else 0
        elapsed, last = 0, None
        for start, item, end in part.rows:
            assert start == f"{elapsed // 60}:{elapsed % 60:02d}"
            if isinstance(item, Session):  # launched at the start of a break: no minutes
                assert end == elapsed
                continue
            if isinstance(item, Break):  # after the episode before it
                assert item.minutes == breaks[last] + back_here
            last = getattr(item, "slug", None) or last
            elapsed += (item.minutes if not isinstance(item, Episode)
                        else item.meta["teaching"] + item.meta["exercises"]
                        + (inner[item.slug] + back_here if item.slug in inner else 0))
            assert end == elapsed
        # a break follows exactly the episodes _config.yml names, never the last of a part
        named = [item.slug for _, item, _ in part.rows if isinstance(item, Episode) and item.slug in breaks]
        assert sum(isinstance(item, Break) for _, item, _ in part.rows) == len(
            [slug for slug in named if slug != part.episodes[-1].slug])
    table = schedule_markdown(parts)
    for part in parts:
        assert f"**{part.caption}**" in table
        assert f"| {part.minutes // 60}:{part.minutes % 60:02d} | **Finish**" in table


def test_the_core_is_a_day_in_two_sessions_with_breaks():
    core = schedule_parts(ROOT)[0]
    assert "a day" in core.caption
    assert 240 < core.minutes <= 480, f"the core takes {core.minutes} min, not a day"
    assert any(isinstance(item, Break) for _, item, _ in core.rows)
    assert core.episodes[0].slug == "01-introduction"
    # The CPU session is launched first; the opening and the setup check (_config.yml) follow,
    # which only the core has; the wrap-up ends it.
    config = yaml.safe_load((ROOT / "_config.yml").read_text())["lesson_schedule"]
    first, opening, setup = core.rows[:3]
    assert isinstance(first[1], Session) and first[1].gpus == 0 and first[:1] == ("0:00",)
    assert opening == ("0:00", Slot(config["opening"], "Opening", opening[1].what), config["opening"])
    assert setup[1] == SetupCheck(config["setup_check"])
    assert isinstance(core.rows[-1][1], Slot) and core.rows[-1][1].label == "Wrap-up"
    assert not any(isinstance(item, (SetupCheck, Slot, Session)) for part in schedule_parts(ROOT)[1:]
                   for _, item, _ in part.rows)
    # The GPU session is launched at the start of the break before episode 5.
    rows = [(start, item) for start, item, _ in core.rows]
    at = next(i for i, (_, item) in enumerate(rows) if isinstance(item, Session) and item.gpus)
    assert isinstance(rows[at + 1][1], Break) and rows[at + 1][0] == rows[at][0]
    # After the break, a slot of its own to start it (_config.yml's session_start).
    assert isinstance(rows[at + 2][1], Slot) and rows[at + 2][1].label == "Start of the GPU session"
    assert rows[at + 2][1].minutes == config["session_start"] and rows[at + 3][1].slug == "05-cpu-vs-gpu"
    table = schedule_markdown([core])
    assert "| *Setup check*: " in table and "| 0:00 | *Launch the CPU session* in Open OnDemand (6 hours, " \
        "4 cores, 24 GB, no GPU, on the CPU partition) | | |" in table
    assert "*Launch the GPU session* in Open OnDemand (4 hours, 4 cores, 24 GB, 1 GPU, on the GPU " \
        "partition)" in table and "*Wrap-up*: " in table


def test_a_break_after_an_unknown_episode_is_an_error(tmp_path):
    for name in ("_toc.yml", "_config.yml"):
        (tmp_path / name).write_text((ROOT / name).read_text())
    (tmp_path / "_episodes").mkdir()
    for path in toc_episode_paths(ROOT):
        (tmp_path / path).write_text((ROOT / path).read_text())
    config = tmp_path / "_config.yml"
    good = config.read_text()
    for old, new, message in [
        ("01-introduction: 10", "01-introdution: 10", "breaks: no episode named '01-introdution'"),
        ("setup_check: 28", "setup_check: ten", "setup_check: minutes must be a whole number"),
        ("first: 05-cpu-vs-gpu", "first: 05-cpu-gpu", "sessions, entry 2: no episode named '05-cpu-gpu'"),
        ("      gpus: 1\n", "", "sessions, entry 2: give exactly the keys label, first"),
        ("partition: gpu\n", "partition: gpus\n", "'partition' must be gpu or cpu"),
    ]:
        assert old in good, old
        config.write_text(good.replace(old, new))
        with pytest.raises(FrontMatterError, match=message):
            schedule_parts(tmp_path)


FIGURE = re.compile(r"^:{3,}\{figure\}\s*(?P<src>\S+)\s*\n(?P<opts>(?::[\w-]+:.*\n)*)", re.MULTILINE)
IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<src>[^)\s]+)\)")


def figures(text: str) -> list[tuple[str, str]]:
    """(source, alt text) of every figure and local image in ``text``."""
    found = [(m["src"], dict(re.findall(r":([\w-]+):\s*(.*)", m["opts"])).get("alt", ""))
             for m in FIGURE.finditer(text)]
    return found + [(m["src"], m["alt"]) for m in IMAGE.finditer(text) if "://" not in m["src"]]


def missing_figures(text: str, folder, values: dict[str, str]) -> list[str]:
    """The figures the page shows with ``values`` that are not files. A figure inside
    ``{{ if ref_... }}`` is drawn from that record: while it is missing, the page leaves it out."""
    return [src for src, _ in figures(resolve_conditionals(text, values))
            if not (folder / src).resolve().is_file()]


@pytest.fixture(scope="module")
def lesson_values():
    return placeholder_values(ROOT)


@pytest.mark.parametrize("path", EPISODE_FILES, ids=lambda p: p.name)
def test_figures_exist_have_alt_text_and_live_in_the_episode_folder(path, lesson_values):
    text = path.read_text(encoding="utf-8")
    missing = missing_figures(text, path.parent, lesson_values)
    assert not missing, f"{path.name}: {', '.join(missing)} do not exist"
    for src, alt in figures(text):
        # An alt text made from the figure's own data ({{ ref_..._alt }}, drawn and described by
        # the experiment's figures module) counts as meaningful.
        made = re.fullmatch(r"\{\{\s*ref_\w+_alt\s*\}\}", alt.strip())
        assert made or len(alt.split()) >= 5, f"{path.name}: {src} needs a meaningful alt text"
        assert f"fig/{path.stem}/" in src, f"{path.name}: figures go in fig/{path.stem}/"


def test_a_figure_is_required_unless_its_record_is_missing(tmp_path):
    (tmp_path / "drawn.svg").write_text("<svg/>")
    page = ("![a drawn figure]({src})\n{{{{ if ref_run }}}}![its run](run.svg){{{{ else }}}}"
            "Not recorded yet.{{{{ endif }}}}\n")
    missing, recorded = {"ref_run": "not recorded yet"}, {"ref_run": "NVIDIA H200"}
    assert missing_figures(page.format(src="drawn.svg"), tmp_path, missing) == []
    assert missing_figures(page.format(src="absent.svg"), tmp_path, missing) == ["absent.svg"]
    assert missing_figures(page.format(src="drawn.svg"), tmp_path, recorded) == ["run.svg"]


def test_figure_folders_belong_to_episodes():
    stems = {p.stem for p in EPISODE_FILES}
    folders = {p.name for p in (ROOT / "fig").iterdir() if p.is_dir()}
    assert folders <= stems, folders - stems
