"""The timing model of ``tools/core_check.py``: its rates, an episode's report and table (rules a
and b), the core's day as a whole and its sessions, and the model's table for the instructor guide."""

import math
import re
from dataclasses import dataclass
from pathlib import Path

from carpentry import Break, Session, SetupCheck, Slot, schedule_breaks, schedule_inner_breaks, site_values
from episode_page import PREDICTION, Exercise
from lesson_schedule import _clock

# The slots as a room of 25 takes them (the timings of the rates below: 12 to 15 minutes).
OPENING = 12  # minutes at least: welcome, the day's plan, the code of conduct
SETUP_CHECK = 15  # minutes at least, at the start of the core
WRAP_UP = 10  # minutes at least: key points, feedback, what next
WORKSHOP_DAY = 480  # minutes from the opening to the end of the wrap-up, breaks included
MAX_STRETCH = 90  # minutes of episodes in a row without a break
SESSION_MARGIN = 20  # minutes a session outlasts the part it serves: a late start, a slow room
SESSION_START = 12  # a later session's queue, reconnecting, deleting the one before
BREAK_RETURN = 2  # minutes a room takes to come back from each break of the core
CORE_NAMED = re.compile(r"\bcore\b[^.]{0,80}?\bepisodes (\d+) to (\d+)", re.IGNORECASE | re.DOTALL)
# The guide's copy of the model's table sits between these two lines.
TABLE_START = "<!-- timing model: python tools/core_check.py --write-guide -->"
TABLE_END = "<!-- end of the timing model -->"

# The rates stand on two independent timings of the core by Carpentries instructors (2026-11-28:
# 539 and 528 minutes likely for the day) and on Carpentries experience.
TYPED_LINES_PER_MINUTE = 1  # the instructor types and explains a line, the room types it
# Every cell the room runs costs CELL_MINUTES on top of its lines: 25 people run it and wait for
# the slowest (the timings: a 5-line cell 6 min, a 14-line one 17 with its run). A given line is
# read and explained at READ_LINES_PER_MINUTE; a given cell longer than WALKTHROUGH_LINES is
# walked through by its parts (the 146-line HDF5Batches in 11 min).
CELL_MINUTES = 1
READ_LINES_PER_MINUTE = 10
WALKTHROUGH_LINES = 60
TALK_WORDS_PER_MINUTE = 100  # prose presented with questions: slower than speech (about 130)
# A room takes 1.3 to 2 times an exercise's planned minutes, debrief included.
EXERCISE_FACTOR = 1.5
SLACK = 1.1  # every episode's plan keeps 10 % over the model: the slips a timing calls "likely"
# A room shares its nodes: CPU epochs under load took up to 2.9 times the quiet runs' (2 cores,
# results/contention.jsonl against results/cnn-cpu-vs-gpu.jsonl).
WAIT_ALLOWANCE = 3
# Waits come from what learners run: TensorFlow, on no more cores than a session, without a GPU.
LEARNER_BACKEND = "tensorflow"
MIN_EXERCISE = 8  # minutes, debrief included
MIN_PREDICTION = 3  # minutes, for a one-line prediction
MAX_PROSE_WORDS = 3_000  # per core episode
LONG_SENTENCE = 35  # words
MAX_LONG_SHARE = 0.12


@dataclass
class EpisodeReport:
    slug: str
    minutes: int
    teaching_minutes: int  # the front matter's
    exercise_minutes: int  # the front matter's
    typed_cells: list[int]  # lines of each cell learners type
    given_cells: list[int]  # lines of each given cell
    shown: int  # lines of the commands and scripts the page shows outside cells
    talk: int  # words the instructor presents, instructor notes included
    wait_seconds: float  # recorded wall time of the executed notebook (0: none)
    wait_source: str
    required: list[Exercise]
    cpu_training: list[str]
    sentences: int
    long_sentences: list[str]
    objectives: int
    unassessed: list[int]
    prose: int
    uses_gpu: bool
    wait_run: dict | None = None  # the executed notebook's recorded_run

    @property
    def typed(self) -> int:
        return sum(self.typed_cells)

    @property
    def given(self) -> int:
        return sum(self.given_cells) + self.shown

    @property
    def model(self) -> dict[str, float]:
        """The timing model's minutes of teaching, by part (rule a)."""
        given = sum(CELL_MINUTES + min(n, WALKTHROUGH_LINES) / READ_LINES_PER_MINUTE
                    for n in self.given_cells)
        typed = sum(CELL_MINUTES + n / TYPED_LINES_PER_MINUTE for n in self.typed_cells)
        return {"typed": typed,
                "given": given + self.shown / READ_LINES_PER_MINUTE,
                "talk": self.talk / TALK_WORDS_PER_MINUTE,
                "waits": self.wait_seconds * WAIT_ALLOWANCE / 60}

    @property
    def model_teaching(self) -> int:
        return math.ceil(round(sum(self.model.values()), 6))

    @property
    def required_minutes(self) -> int:
        """The required exercises' minutes as their titles plan them."""
        return sum(e.minutes or 0 for e in self.required)

    @property
    def model_exercises(self) -> int:
        """The required exercises' minutes as a room takes them (rule b)."""
        return math.ceil(round(EXERCISE_FACTOR * self.required_minutes, 6))

    @property
    def least_minutes(self) -> int:
        """The scheduled minutes the model asks for, with its slack (rule a)."""
        return math.ceil(round(SLACK * (self.model_teaching + self.model_exercises), 6))

    def wait_problem(self, cores: int) -> str | None:
        """Why the recorded wait is not one that learners in a session of `cores` wait for."""
        run = self.wait_run or {}
        machine = run.get("machine") or {}
        if (run.get("backend") == LEARNER_BACKEND and not machine.get("gpu")
                and 0 < (machine.get("cores_usable") or 0) <= cores):
            return None
        return (f"its wait ({self.wait_source}) is not what learners run: record it with "
                f"{LEARNER_BACKEND}, no GPU and at most the session's {cores} cores "
                f"(KERAS_BACKEND={LEARNER_BACKEND} python tools/record_run.py --only "
                f"{self.slug[:2]} on such a machine)")

    @property
    def long_share(self) -> float:
        return len(self.long_sentences) / self.sentences if self.sentences else 0.0

    def exercise_failures(self) -> list[str]:
        problems = []
        for e in self.required:
            least = MIN_PREDICTION if e.prediction else MIN_EXERCISE
            if e.minutes is None:
                problems.append(
                    f"{self.slug}: the exercise '{e.title}' gives no minutes: end its title with "
                    "its minutes, debrief included, '(10 min)', or make it '(optional)'")
            elif e.minutes < least:
                problems.append(
                    f"{self.slug}: the exercise '{e.title}' takes {e.minutes} minutes, under "
                    f"{MIN_EXERCISE} ({MIN_PREDICTION} for a one-line prediction, class "
                    f"'{PREDICTION}'): give it the time it needs, or make it optional")
        if self.model_exercises > self.exercise_minutes:
            problems.append(
                f"{self.slug}: its {len(self.required)} required exercises, planned at "
                f"{self.required_minutes} minutes, take {self.model_exercises} in a room "
                f"({EXERCISE_FACTOR} times), over its {self.exercise_minutes} exercise minutes "
                "(front matter 'exercises'): give them the time, or cut or make some optional")
        return problems

    def failures(self) -> list[str]:
        problems = []
        if self.model_teaching > self.teaching_minutes:
            parts = ", ".join(f"{name} {minutes:.1f}" for name, minutes in self.model.items())
            problems.append(
                f"{self.slug}: the room needs {self.model_teaching} teaching minutes ({parts}), "
                f"over its {self.teaching_minutes} (front matter 'teaching'): give it the time, "
                "or cut what the room does (moving text into a note or a tag saves nothing)")
        problems += self.exercise_failures()
        if self.least_minutes > self.minutes:
            problems.append(
                f"{self.slug}: its {self.minutes} scheduled minutes leave no {SLACK - 1:.0%} to "
                f"spare over the model's {self.model_teaching + self.model_exercises} (teaching "
                f"{self.model_teaching}, exercises {self.model_exercises}): schedule at least "
                f"{self.least_minutes}, or cut")
        for title in self.cpu_training:
            problems.append(
                f"{self.slug}: the exercise '{title}' trains on the CPU again; a core exercise may "
                "train only on the GPU or for a few steps (steps_per_epoch=): make it optional")
        if self.long_share > MAX_LONG_SHARE:
            problems.append(
                f"{self.slug}: {len(self.long_sentences)} of {self.sentences} sentences "
                f"({self.long_share:.0%}) are longer than {LONG_SENTENCE} words, over the limit of "
                f"{MAX_LONG_SHARE:.0%}; the longest begins: "
                f"'{' '.join(self.long_sentences[0].split()[:8])} ...'")
        if self.unassessed:
            problems.append(
                f"{self.slug}: objective(s) {', '.join(map(str, self.unassessed))} of the front matter "
                "have no required exercise with a solution that names them (':class: objective-N')")
        if self.prose > MAX_PROSE_WORDS:
            problems.append(
                f"{self.slug}: {self.prose:,} words of prose, over {MAX_PROSE_WORDS:,}: cut; what "
                "an instructor needs goes into an instructor note, what an expert wants into a "
                "further episode")
        return problems


RATES = (f"Typed lines at {TYPED_LINES_PER_MINUTE} a minute; given lines (given cells and shown "
         f"commands) at {READ_LINES_PER_MINUTE} a minute, a given cell's first {WALKTHROUGH_LINES} "
         f"lines (a longer one is walked through by its parts); {CELL_MINUTES} min more for each "
         f"cell the room runs, typed or given; presented words, instructor notes included, at "
         f"{TALK_WORDS_PER_MINUTE} a minute; each executed notebook's recorded run time times "
         f"{WAIT_ALLOWANCE}; required exercises at {EXERCISE_FACTOR} times their planned minutes; "
         f"and {SLACK - 1:.0%} to spare over it all.")


def table(report: EpisodeReport) -> str:
    def row(what, value, limit, ok):
        return f"  {what:<34} {value:>10} {limit:>12}  {'ok' if ok else 'FAILS'}"

    lines = [
        f"{report.slug} ({report.minutes} scheduled minutes)",
        f"  {'check':<34} {'value':>10} {'limit':>12}",
        row("a. teaching minutes the room needs", report.model_teaching, report.teaching_minutes,
            report.model_teaching <= report.teaching_minutes),
    ]
    for name, minutes in report.model.items():
        lines.append(f"     {name:<31} {minutes:>10.1f}")
    lines.append(row(f"b. exercises' minutes ({EXERCISE_FACTOR} x planned)", report.model_exercises,
                     report.exercise_minutes, not report.exercise_failures()))
    for e in report.required:
        least = MIN_PREDICTION if e.prediction else MIN_EXERCISE
        lines.append(row(f"   {e.title[:31]}", "?" if e.minutes is None else e.minutes,
                         f">= {least}", e.minutes is not None and e.minutes >= least))
    lines += [
        row(f"   scheduled, {SLACK - 1:.0%} over the model", report.minutes, f">= {report.least_minutes}",
            report.minutes >= report.least_minutes),
        row("c. exercises training on the CPU", len(report.cpu_training), 0, not report.cpu_training),
        row(f"d. sentences over {LONG_SENTENCE} words", f"{len(report.long_sentences)}/{report.sentences}",
            f"{MAX_LONG_SHARE:.0%}", report.long_share <= MAX_LONG_SHARE),
        row("e. objectives without an exercise", len(report.unassessed), 0, not report.unassessed),
        row("f. words of prose", f"{report.prose:,}", f"{MAX_PROSE_WORDS:,}",
            report.prose <= MAX_PROSE_WORDS),
    ]
    return "\n".join(lines)



def model_day(reports: list[EpisodeReport], setup: EpisodeReport | None, rests: list[int],
              later_sessions: int) -> dict[str, int]:
    """The core's day as the model counts it, by part: slots, episodes with the slack, and breaks."""
    day = {"opening": OPENING, "setup check": setup.least_minutes if setup else SETUP_CHECK}
    day.update({r.slug: r.least_minutes for r in reports})
    day["breaks"] = sum(rest + BREAK_RETURN for rest in rests)
    day["session starts"] = SESSION_START * later_sessions
    day["wrap-up"] = WRAP_UP
    return day



def slot_failures(core) -> list[str]:
    problems = []
    items = [item for _, item, _ in core.rows if not isinstance(item, Session)]
    opening = items[0] if items and isinstance(items[0], Slot) else None
    setup = items[1] if len(items) > 1 and isinstance(items[1], SetupCheck) else None
    wrap_up = items[-1] if items and isinstance(items[-1], Slot) else None
    for item, least, key, text in ((opening, OPENING, "opening", "opens with no opening"),
                                   (setup, SETUP_CHECK, "setup_check", "starts with no setup check"),
                                   (wrap_up, WRAP_UP, "wrap_up", "ends with no wrap-up")):
        if item is None or item.minutes < least:
            problems.append(f"the core {text} of {least} minutes: set lesson_schedule.{key}: "
                            f"{least} in _config.yml")
    for n, (_, item, _end) in enumerate(core.rows):
        if isinstance(item, Session) and n:
            after = [i for _, i, _ in core.rows[n + 1:] if isinstance(i, Slot) or hasattr(i, "slug")]
            start = after[0] if after and isinstance(after[0], Slot) else None
            if start is None or start.minutes < SESSION_START:
                problems.append(f"the {item.label} has no start of its own of {SESSION_START} "
                                "minutes (queue, reconnect, delete the session before): set "
                                f"lesson_schedule.session_start: {SESSION_START} in _config.yml")
    if core.minutes > WORKSHOP_DAY:
        problems.append(f"the core takes {core.minutes} minutes with its breaks, opening, setup "
                        f"check and wrap-up, over the workshop day of {WORKSHOP_DAY}")
    return problems


def core_rests(root: Path, core) -> list[int]:
    """The rests of the core's breaks (after an episode but the last, and inside one)."""
    slugs = [ep.slug for ep in core.episodes]
    after, inside = schedule_breaks(root), schedule_inner_breaks(root)
    return [after[s] for s in slugs[:-1] if s in after] + [inside[s] for s in slugs if s in inside]


def break_failures(core, rests: list[int]) -> list[str]:
    """Each of the core's breaks holds the minutes a room takes to come back from it."""
    scheduled = sum(item.minutes for _, item, _ in core.rows if isinstance(item, Break))
    scheduled += sum(core.inner_breaks.values())
    if scheduled < sum(rests) + BREAK_RETURN * len(rests):
        return [f"the core's breaks do not hold the {BREAK_RETURN} minutes a room takes to come "
                f"back from each: set lesson_schedule.break_return: {BREAK_RETURN} in _config.yml"]
    return []


def stretch_failures(part) -> list[str]:
    """Minutes in a row without a break; a break inside an episode splits it in halves."""
    stretch = 0
    for _, item, _end in part.rows:
        if isinstance(item, Break):
            stretch = 0
            continue
        if isinstance(item, Session):
            continue
        inner = part.inner_breaks.get(getattr(item, "slug", ""), 0)
        if inner:
            half = item.minutes // 2
            if stretch + half > MAX_STRETCH:
                stretch += half
            else:
                stretch = item.minutes - half
        else:
            stretch += item.minutes
        if stretch > MAX_STRETCH:
            name = getattr(item, "slug", getattr(item, "label", ""))
            return [f"'{part.caption}': {stretch} minutes without a break up to {name}, over "
                    f"{MAX_STRETCH}; add a break in _config.yml (lesson_schedule.breaks, or "
                    "breaks_inside for a long episode)"]
    return []


def session_failures(root: Path, core, reports) -> list[str]:
    """Each session outlasts the part it serves and holds GPUs exactly where they are used."""
    sessions = core.sessions
    if not sessions or core.rows[0][1] is not sessions[0][0]:
        return ["the core names no Open OnDemand session launched at its start: add "
                "lesson_schedule.sessions to _config.yml, the first from the first episode"]
    problems = []
    most = int(site_values(root).get("site_session_max_hours", "0") or 0)
    uses_gpu = {r.slug: r.uses_gpu for r in reports}
    for session, start, end in sessions:
        served = [item.slug for _, item, at in core.rows
                  if hasattr(item, "slug") and start < at <= end and item.slug in uses_gpu]
        need = end - start + SESSION_MARGIN
        if session.hours * 60 < need:
            problems.append(
                f"the {session.label} lasts {session.hours} hours but serves {end - start} "
                f"minutes (from its launch at {start // 60}:{start % 60:02d}); with "
                f"{SESSION_MARGIN} minutes to spare it needs {math.ceil(need / 60)} hours: set "
                "its hours in lesson_schedule.sessions")
        if most and session.hours > most:
            problems.append(f"the {session.label} asks for {session.hours} hours, over the "
                            f"site's session_max_hours of {most}")
        for r in reports:
            if r.slug in served and r.wait_seconds and r.wait_problem(session.cores):
                problems.append(f"{r.slug}: {r.wait_problem(session.cores)}")
        gpu_used = [slug for slug in served if uses_gpu[slug]]
        if gpu_used and not session.gpus:
            problems.append(f"the {session.label} has no GPU, but {', '.join(gpu_used)} uses "
                            "one: start a GPU session at the break before it")
        if session.gpus and not gpu_used:
            problems.append(f"the {session.label} holds {session.gpus} GPU(s) for "
                            f"{', '.join(served)}, which use none: ask for 0 GPUs")
        if (session.partition == "gpu") != bool(session.gpus):
            problems.append(f"the {session.label} asks for the {session.partition.upper()} "
                            f"partition with {session.gpus} GPU(s): a session with GPUs asks "
                            "for gpu, one without for cpu")
    return problems


def named_core_failures(root: Path, core) -> list[str]:
    first, last = int(core.episodes[0].number), int(core.episodes[-1].number)
    problems = []
    for name in ("guide.md", "index.md"):
        page = Path(root) / name
        if not page.exists():
            continue
        for match in CORE_NAMED.finditer(page.read_text(encoding="utf-8")):
            if (int(match[1]), int(match[2])) != (first, last):
                problems.append(f"{name} names the core as episodes {match[1]} to {match[2]}; "
                                f"_toc.yml's core is episodes {first} to {last}")
    return problems


def model_table(reports, rates: str, core, setup=None, day: dict | None = None) -> str:
    """The timing model per core episode, the sessions and the day, in Markdown for the guide."""
    lines = [
        rates,
        "",
        "| Episode | Typed lines | Given lines (cells) | Words presented | Waits | Teaching (model) "
        "| Exercises (model) | Model + 10 % | Scheduled |",
        "|---|---:|---:|---:|---|---:|---:|---:|---:|",
    ]
    for r in reports:
        waits = (f"{r.model['waits']:.1f} min ({r.wait_source})" if r.wait_seconds
                 else "none recorded")
        lines.append(f"| {r.slug} | {r.typed} | {r.given} ({len(r.given_cells)}) | {r.talk:,} | "
                     f"{waits} | {r.model_teaching} of {r.teaching_minutes} min | "
                     f"{r.model_exercises} of {r.exercise_minutes} min | {r.least_minutes} min | "
                     f"{r.minutes} min |")
    slots = {item.label: item.minutes for _, item, _ in core.rows if isinstance(item, Slot)}
    setup_minutes = sum(item.minutes for _, item, _ in core.rows if isinstance(item, SetupCheck))
    breaks = core.minutes - sum(slots.values()) - setup_minutes - sum(r.minutes for r in reports)
    work = core.minutes - breaks
    model = f"; the model's {setup} min with 10 % to spare" if setup is not None else ""
    parts = [f"the setup check ({setup_minutes} min{model})"] + [
        f"the {label[0].lower()}{label[1:]} ({minutes} min)" for label, minutes in slots.items()]
    lines += ["", f"With {', '.join(parts[:-1])} and {parts[-1]}, the room works for {work} "
              f"minutes. With the breaks ({breaks} min, {BREAK_RETURN} of each to come back), "
              f"the day takes {core.minutes} minutes."]
    if day:
        lines += ["", f"The model's day, each part at its least: {sum(day.values())} minutes ("
                  + ", ".join(f"{part} {minutes}" for part, minutes in day.items()) + ")."]
    by_slug = {r.slug: r for r in reports}
    for session, start, end in core.sessions:
        served = [by_slug[item.slug] for _, item, at in core.rows
                  if getattr(item, "slug", None) in by_slug and start < at <= end]
        lines.append("")
        lines.append(f"The {session.label} ({session.hours} h from {_clock(start)}) serves "
                     f"{end - start} minutes: its episodes are scheduled for "
                     f"{sum(r.minutes for r in served)}, and the model with 10 % to spare "
                     f"asks {sum(r.least_minutes for r in served)}.")
    return "\n".join(lines) + "\n"


def guide_block(text: str) -> str | None:
    """The table between the guide's markers, or None without them."""
    if TABLE_START not in text or TABLE_END not in text:
        return None
    return text[text.index(TABLE_START) + len(TABLE_START):text.index(TABLE_END)].strip("\n") + "\n"


def write_guide(path: Path, table: str) -> None:
    text = path.read_text(encoding="utf-8")
    if guide_block(text) is None:
        raise ValueError(f"{path} has no lines {TABLE_START!r} and {TABLE_END!r} to write between")
    head, rest = text.split(TABLE_START, 1)
    tail = rest.split(TABLE_END, 1)[1]
    path.write_text(f"{head}{TABLE_START}\n{table}{TABLE_END}{tail}", encoding="utf-8")
