"""Check that the core of the lesson can be taught in the day it claims, on what learners really do.

    python tools/core_check.py               # a table per core episode; exit 1 naming what fails
    python tools/core_check.py --root DIR    # another copy of the lesson
    python tools/core_check.py --write-guide # write the timing model's table into guide.md

The core is the first part of ``_toc.yml`` that lists episodes. The timing model and the rules
(a. teaching time, b. exercise time, c. no CPU training in an exercise, d. sentences,
e. objectives, f. prose; the core's day, breaks and sessions) are in ``tools/core_schedule.py``,
and guide.md describes them ("The timing model").
"""

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "_ext"))
sys.path.insert(0, str(ROOT / "tools"))
import core_schedule  # noqa: E402
from carpentry import FrontMatterError, SetupCheck, schedule_parts, split_front_matter  # noqa: E402
from core_schedule import LONG_SENTENCE, RATES, SLACK, EpisodeReport, model_day, table  # noqa: E402
from episode_page import (  # noqa: E402
    Exercise,
    as_shown,
    parse_body,
    prose_words,
    sentences,
    words,
)

SETUP_SECTION = re.compile(r"^##\s+Setup check\s*$", re.MULTILINE)
EXECUTED_DIR = "executed"
MAX_REQUIRED = 14  # required exercises in the core, a day
MAX_CORE_PROSE = 10_000
GPU_DEVICE = re.compile(r"""["']gpu(?::\d+)?["']""")
BLANK = "____"
TRAINING_CALL = re.compile(r"\.fit\(|\btrain_on\(")
TRAIN_AGAIN = re.compile(
    r"\b(?:re)?train(?:s|ing)?\b[^.?!:;]{0,60}\bagain\b|\bretrain"
    r"|\brun the cells\b[^.?!]{0,40}\b(?:again|from)\b",
    re.IGNORECASE,
)


class CoreCheckError(Exception):
    """The lesson's files do not let the core be checked (no core part, bad front matter)."""


def trains_on_cpu(exercise: Exercise) -> bool:
    """Whether an exercise asks learners to train on the CPU again (rule c of the module)."""
    prose = "\n".join(exercise.question + exercise.solution)
    blocks = exercise.code + re.findall(r"`([^`]+)`", prose)
    # Code with blanks to fill in is written, not run.
    calls = [b for b in blocks if TRAINING_CALL.search(b) and BLANK not in b]
    asks = bool(TRAIN_AGAIN.search(re.sub(r"`[^`]*`", "", prose)))
    if not calls and not asks:
        return False
    text = exercise.text
    if '"gpu' in text and '"cpu"' not in text:
        return False
    return asks or not all("steps_per_epoch=" in call for call in calls)


def recorded_wait(root: Path, slug: str) -> tuple[float, str, dict | None]:
    """The recorded wall time of an episode's executed notebook, where, and its recorded run."""
    path = Path(root) / EXECUTED_DIR / f"{slug}.ipynb"
    if not path.exists():
        return 0.0, "no executed notebook", None
    try:
        run = json.loads(path.read_text(encoding="utf-8"))["metadata"]["recorded_run"]
        seconds = float(run["wall_s"])
    except (ValueError, KeyError, TypeError) as exc:
        raise CoreCheckError(f"{path}: no recorded run time (metadata recorded_run.wall_s): "
                             f"record it again with python tools/record_run.py ({exc})") from None
    machine = run.get("machine") or {}
    where = machine.get("gpu") or f"{machine.get('cores_usable', '?')} CPU cores, no GPU"
    return seconds, (f"{EXECUTED_DIR}/{slug}.ipynb, {seconds:.0f} s, {run.get('backend', '?')} on "
                     f"{where}"), run


def split_setup(body: str) -> tuple[str, str]:
    """The '## Setup check' section (up to the next heading of its level), and the rest."""
    found = SETUP_SECTION.search(body)
    if not found:
        return "", body
    after = re.search(r"^#{1,2}\s", body[found.end():], re.MULTILINE)
    end = found.end() + after.start() if after else len(body)
    return body[found.start():end], body[:found.start()] + body[end:]


def check_episode(root: Path, relpath: str | Path, body: str | None = None) -> EpisodeReport:
    """An episode's report; `body`: a part of its body (without its setup check section)."""
    path = Path(root) / relpath
    meta, whole = split_front_matter(path.read_text(encoding="utf-8"))
    page = parse_body(whole if body is None else body)
    required = [e for e in page.exercises if not e.optional]
    assessed = {n for e in required if e.has_solution for n in e.objectives}
    objectives = len(meta.get("objectives") or [])
    found = sentences([as_shown(p) for p in page.paragraphs])
    longest = sorted((s for s in found if words(s) > LONG_SENTENCE), key=words, reverse=True)
    typed = meta.get("type-along", True) is not False
    wait, source, run = recorded_wait(root, path.stem) if body is None else (0.0, "", None)
    return EpisodeReport(
        slug=path.stem,
        minutes=int(meta["teaching"]) + int(meta["exercises"]),
        teaching_minutes=int(meta["teaching"]),
        exercise_minutes=int(meta["exercises"]),
        typed_cells=[c.typed_lines for c in page.cells if c.typed] if typed else [],
        given_cells=[c.typed_lines for c in page.cells if c.given or (c.typed and not typed)],
        shown=page.shown_code_lines,
        talk=prose_words(page.talk),
        wait_seconds=wait,
        wait_source=source,
        required=required,
        cpu_training=[e.title for e in required if trains_on_cpu(e)],
        sentences=len(found),
        long_sentences=longest,
        objectives=objectives,
        unassessed=[n for n in range(1, objectives + 1) if n not in assessed],
        prose=prose_words(page.prose),
        uses_gpu=any(GPU_DEVICE.search("\n".join(c.lines)) for c in page.cells if not c.optional),
        wait_run=run,
    )


def core_reports(root: Path, core) -> tuple[list[EpisodeReport], EpisodeReport | None]:
    """The core's episodes as the model times them, and the first one's setup check section (or
    None), which the schedule's setup check times."""
    reports = [check_episode(root, ep.path) for ep in core.episodes]
    if not reports:
        return reports, None
    text = (Path(root) / core.episodes[0].path).read_text(encoding="utf-8")
    setup, rest = split_setup(split_front_matter(text)[1])
    if not setup:
        return reports, None
    kept = ("wait_seconds", "wait_source", "wait_run", "sentences", "long_sentences", "prose",
            "unassessed")
    first = replace(check_episode(root, core.episodes[0].path, rest),
                    **{name: getattr(reports[0], name) for name in kept})
    return [first, *reports[1:]], check_episode(root, core.episodes[0].path, setup)


def setup_failures(core, setup: EpisodeReport | None) -> list[str]:
    """The setup check's slot holds its section as the model times it, with the slack."""
    if setup is None:
        return []
    minutes = sum(item.minutes for _, item, _ in core.rows if isinstance(item, SetupCheck))
    if setup.least_minutes > minutes:
        return [f"the setup check section of {setup.slug} takes "
                f"{setup.model_teaching + setup.model_exercises} minutes as the model counts it "
                f"(its exercises included); with {SLACK - 1:.0%} to spare, set "
                f"lesson_schedule.setup_check: {setup.least_minutes} (now {minutes}), or cut it"]
    return []


def core_part(root: Path):
    parts = schedule_parts(root)
    if not parts or "core" not in parts[0].caption.lower():
        raise CoreCheckError("_toc.yml: the first part that lists episodes must be the core "
                             "(its caption names it, e.g. 'Core episodes (a day, in two sessions)')")
    return parts


def schedule_failures(root: Path, reports: list[EpisodeReport] | None = None) -> list[str]:
    """The core's day and sessions, the breaks of every part, the core as guide and index name it."""
    parts = core_part(root)
    core = parts[0]
    setup = None
    if reports is None:
        reports, setup = core_reports(root, core)
    problems = core_schedule.slot_failures(core) + setup_failures(core, setup)
    problems += core_schedule.break_failures(core, core_schedule.core_rests(root, core))
    for part in parts:
        problems += core_schedule.stretch_failures(part)
    problems += core_schedule.session_failures(root, core, reports)
    problems += core_schedule.named_core_failures(root, core)
    return problems


def guide_table(root: Path = ROOT) -> str:
    core = core_part(root)[0]
    reports, setup = core_reports(root, core)
    day = model_day(reports, setup, core_schedule.core_rests(root, core), len(core.sessions) - 1)
    return core_schedule.model_table(reports, RATES, core, setup and setup.least_minutes, day)


def core_failures(reports: list[EpisodeReport]) -> list[str]:
    """The limits on the core as a whole: required exercises and prose."""
    problems = []
    required = sum(len(r.required) for r in reports)
    if required > MAX_REQUIRED:
        problems.append(f"the core has {required} required exercises, over {MAX_REQUIRED}: make "
                        "some optional (an objective needs one) or cut them")
    prose = sum(r.prose for r in reports)
    if prose > MAX_CORE_PROSE:
        problems.append(f"the core has {prose:,} words of prose, over {MAX_CORE_PROSE:,}: cut "
                        "rather than move")
    return problems


def guide_failures(root: Path, reports: list[EpisodeReport]) -> list[str]:
    guide = Path(root) / "guide.md"
    if not guide.exists():
        return []
    shown = core_schedule.guide_block(guide.read_text(encoding="utf-8"))
    if shown != guide_table(root):
        return ["guide.md does not show the timing model's table as it is now: run "
                "python tools/core_check.py --write-guide"]
    return []


def run(root: Path = ROOT, out=sys.stdout) -> list[str]:
    """Print the tables; return the failures (empty when the core passes)."""
    parts = core_part(root)
    core = parts[0]
    failures = []
    reports, setup = core_reports(root, core)
    for report in reports:
        print(table(report), file=out)
        failures += report.failures()
    if setup is not None:
        print(f"setup check section of {setup.slug}: teaching {setup.model_teaching} minutes "
              f"({', '.join(f'{k} {v:.1f}' for k, v in setup.model.items())}), exercises "
              f"{setup.model_exercises}; with the slack {setup.least_minutes}", file=out)
        failures += setup_failures(core, setup)
    print(f"core: {len(core.episodes)} episodes, {core.minutes} minutes with breaks, opening, "
          f"setup check and wrap-up (limit {core_schedule.WORKSHOP_DAY}), in "
          f"{len(core.sessions)} session(s), {sum(len(r.required) for r in reports)} required "
          f"exercises (limit {MAX_REQUIRED}), "
          f"{sum(r.prose for r in reports):,} words of prose (limit {MAX_CORE_PROSE:,})", file=out)
    day = model_day(reports, setup, core_schedule.core_rests(root, core), len(core.sessions) - 1)
    print(f"the model's day: {sum(day.values())} minutes ("
          + ", ".join(f"{part} {minutes}" for part, minutes in day.items()) + ")", file=out)
    failures += core_failures(reports)
    failures += schedule_failures(root, reports)  # the setup check's failures are above
    failures += guide_failures(root, reports)
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the lesson folder (default: this one)")
    parser.add_argument("--write-guide", action="store_true",
                        help="write the timing model's table into guide.md, then check")
    args = parser.parse_args(argv)
    try:
        if args.write_guide:
            core_schedule.write_guide(args.root / "guide.md", guide_table(args.root))
        failures = run(args.root)
    except (CoreCheckError, FrontMatterError, OSError, ValueError) as exc:
        print(f"core check: {exc}", file=sys.stderr)
        return 2
    for failure in failures:
        print(f"FAILS: {failure}", file=sys.stderr)
    if failures:
        print(f"core check: {len(failures)} problem(s); see the rules in tools/core_check.py",
              file=sys.stderr)
        return 1
    print("core check: the core passes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
