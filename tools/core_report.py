"""The timing model of tools/core_check.py (rules a and b): rates, an episode's report and table."""

from __future__ import annotations

import math
from dataclasses import dataclass

from core_schedule import BREAK_RETURN, OPENING, SESSION_START, SETUP_CHECK, WRAP_UP
from episode_page import PREDICTION, Exercise

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
