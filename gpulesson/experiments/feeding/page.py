"""Values for the page: the episode's ``ref_feed_*`` placeholders and the notebook's table.

:func:`substitutions` gives sentences and a whole Markdown table, built from what the reference
run has: no cell or sentence reads "not recorded yet". A run without GPU records gives a table
of the CPU alone and says nothing of the GPU: the episode says once, in a note conditional on
``ref_feed_gpu``, what is missing and how to record it. A pipeline that delivered wrong data is
left out, and a sentence says so.

Numbers follow the lesson's measurement rule (:mod:`gpulesson.experiments.common`): a rate or a
time is its median and range (:func:`~gpulesson.experiments.common.summary_text`), and every
ranking or comparison word ("faster", "N× slower", the fastest pipeline, a loader that leaves
the model waiting) comes from :func:`~gpulesson.experiments.common.compare`,
:func:`~gpulesson.experiments.common.rank` or :func:`~gpulesson.experiments.common.best_text`:
where ranges overlap, or a condition was timed once, the page says there is no measurable
difference instead of ranking noise. The figures' alt texts come from the code that draws them
(:func:`gpulesson.experiments.feeding.figures.alt_texts`).
"""

from __future__ import annotations

from gpulesson.devices import BACKEND_TITLES
from gpulesson.experiments.common import NO_DIFFERENCE, best_text, compare, summary_text
from gpulesson.experiments.feeding.records import (
    PIPELINES,
    RESULTS_FILE,
    TARGET_EPOCH_SECONDS,
    TARGET_SHARE,
    base_rates,
    best_hdf5,
    delivered_wrong_data,
    epoch_summary,
    find,
    full_epoch_summary,
    quoted,
    rate_summary,
    rate_text,
    reference_run,
    short_setting,
    shown,
    sweep_device,
    targets,
)
from gpulesson.results import NOT_RECORDED, data_label, hardware, software
from gpulesson.results import duration as seconds_text

DEVICES = ("cpu", "gpu")
RECORD_COMMAND = "python -m gpulesson.experiments.feeding"
# Short row names of the page's table.
ROWS = {
    "classic": "classic (gzip, guessed chunks, reads all to count)",
    "lesson": "lesson, uncompressed",
    "lesson-lzf": "lesson, lzf",
    "lesson-gzip": "lesson, gzip",
    "lesson-workers": "lesson, uncompressed, Keras workers",
    "lesson-gzip-workers": "lesson, gzip, Keras workers",
    "ram": "whole data set in RAM",
    "device": "data resident on the device",
}
# A loader that alone delivers less than this many times the images per second of training
# from it leaves the model waiting: the margin absorbs the epochs' spread and the loader's
# share of the CPU while training runs. The episode states the same rule (tested).
LOADER_MARGIN = 1.5


# --- numbers as text ------------------------------------------------------------------------------



def rate_summary_text(summary) -> str:
    """A rate summary on the page: "823 images/s (1 repeat, no range)", "32,666 images/s (range
    30,100–33,000 images/s, 5 repeats)"."""
    return summary_text(summary, lambda v: f"{rate_text(v)} images/s")


def seconds_summary_text(summary) -> str:
    """A time summary on the page, e.g. "1.5 min (range 1.4–1.6 min, 5 repeats)"."""
    return summary_text(summary, seconds_text)




def versus(a_name: str, a: dict, b_name: str, b: dict, verb: str = "trained") -> str:
    """Rate ``a`` against rate ``b`` as a clause in the rule's words (:func:`compare`):
    "the classic pipeline trained 3.1× slower than `lesson`", or, where the rule cannot tell
    them apart, "the lesson's rule finds no measurable difference between ... and ... (their
    ranges overlap)"."""
    verdict = compare(a, b, higher_is_better=True)
    if verdict.measurable:
        return f"{a_name} {verb} {verdict.text} {b_name}"
    return f"the lesson's rule finds {NO_DIFFERENCE} between {a_name} and {b_name} ({_why(a, b)})"


def _why(*summaries, many: bool = False) -> str:
    """Why the rule cannot tell ``summaries`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in summaries)
    if least < 2:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    return "their ranges overlap"


def ratio_text(value: float) -> str:
    """A ratio with the digits it deserves: 1.86 -> '1.9', 48.2 -> '48'."""
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"






def targets_text(checks: dict | None) -> str:
    if checks is None:
        return NOT_RECORDED
    share = "met" if checks["share_ok"] else "not met"
    epoch = "met" if checks["epoch_ok"] else "not met"
    how = "estimated from partial epochs" if checks["epoch_estimated"] else "measured"
    size = "" if checks["full_size"] else f" (only {checks['n_images']:,} images: not the goal's size)"
    return (f"{checks['pipeline']}: {checks['share']:.0%} of device-resident data "
            f"(goal {TARGET_SHARE:.0%}: {share}); one epoch {checks['epoch_seconds']:.2f} s, "
            f"{how} (goal {TARGET_EPOCH_SECONDS:g} s: {epoch}){size}")


def wrong_data_sentence(records) -> str:
    """Which pipelines of ``records`` are left out because they delivered wrong data, or ''."""
    left_out = sorted({r["pipeline"] for r in records if delivered_wrong_data(r)},
                      key=list(PIPELINES).index)
    if not left_out:
        return ""
    backends = " and ".join(sorted({BACKEND_TITLES.get(r["backend"], r["backend"])
                                    for r in records if delivered_wrong_data(r)}))
    names = " and ".join(f"`{name}`" for name in left_out)
    return (f"The run also timed {names} with Keras worker processes on {backends}, where they "
            "delivered batches of earlier epochs: those rates are kept in the results file "
            "but not shown.")


# --- the notebook's table -----------------------------------------------------------------------

def describe(records) -> str:
    """A table of one run, narrow enough for a page's column: images/s and epoch time (median,
    range, timed epochs) per record; training rows name their setting, loader rows say
    "loader"; a "*" marks partial epochs, explained under the table."""
    if not records:
        return "No run recorded."
    lines = [f"Run {records[0]['run_id']}: {software(records)}; {data_label(records)}"]
    lines += [f"  {k}: {v}" for k, v in hardware(records).items()]
    lines.append(f"{'dev':3} {'pipeline':19} {'setting':14} {'batch':>5} {'img/s':>8} "
                 f"{'epoch s (range)':>23} n")
    partial = set()
    for r in records:
        epochs = epoch_summary(r)
        mark = ""
        if r["partial_epoch"]:
            partial.add((r["steps"], r["full_epoch_steps"]))
            mark = "*"
        wrong = " WRONG DATA" if delivered_wrong_data(r) else ""
        lines.append(
            f"{r['device_kind']:3} {r['pipeline']:19} {short_setting(r):14} {r['batch_size']:>5} "
            f"{rate_text(rate_summary(r)['median']):>8} {epochs['median']:>7.3f} "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}) {epochs['n']}{mark}{wrong}")
    for steps in sorted({steps for steps, _ in partial}):
        fulls = sorted(full for timed, full in partial if timed == steps)
        of = f"{fulls[0]}" if len(fulls) == 1 else f"{fulls[0]}-{fulls[-1]}"
        lines.append(f"* partial epochs: the first {steps} steps timed (of {of} an epoch)")
    if any(delivered_wrong_data(r) for r in records):
        lines.append("WRONG DATA: Keras worker processes on this backend delivered batches of "
                     "earlier epochs; the rate is not valid.")
    checks = targets(records)
    if checks:
        lines.append(targets_text(checks))
    return "\n".join(lines)


# --- the page's values --------------------------------------------------------------------------

def _rate_cell(record) -> str:
    return rate_summary_text(rate_summary(record)).replace(" images/s", "") if record \
        else "not measured"


def fastest_text(records, device: str) -> str:
    """The fastest pipeline in training on ``device`` in the rule's words
    (:func:`~gpulesson.experiments.common.best_text`): "`ram`", or several names and "no
    measurable difference" where the rule cannot tell them apart."""
    rates = base_rates(records, device)
    return best_text(rates, higher_is_better=True, quote=quoted) if rates else "not measured"


def table(records) -> str:
    """The reference run as a Markdown table: two columns per device it has (training, and the
    loader alone; images/s as median and range), a row per pipeline with shown records, epoch
    times and the fastest pipeline in the rule's words; then a sentence on what is missing or
    left out."""
    if not records:
        return (f"No reference run has been recorded yet: `{RECORD_COMMAND}` records one "
                "(the instructor note gives the whole command).")
    names = hardware(records)
    devices = [d for d in DEVICES if any(r.get("device_kind") == d for r in shown(records))]
    header = []
    for d in devices:
        header += [f"{d.upper()}: {names[d.upper()]}, training", f"{d.upper()}: loader alone"]
    lines = ["| pipeline | " + " | ".join(header) + " |", "|---" * (len(header) + 1) + "|"]
    for pipeline in PIPELINES:
        if any(find(records, d, pipeline) for d in devices):
            cells = []
            for d in devices:
                cells += [_rate_cell(find(records, d, pipeline)),
                          _rate_cell(find(records, d, pipeline, "loader"))]
            lines.append(f"| {ROWS[pipeline]} | " + " | ".join(cells) + " |")
    for pipeline, what in (("classic", "classic"), ("lesson", "lesson (uncompressed)"),
                           ("device", "on the device")):
        found = [find(records, d, pipeline) for d in devices]
        if any(found):
            cells = []
            for c in found:
                cells += [seconds_summary_text(full_epoch_summary(c)) if c else "not measured",
                          ""]
            lines.append(f"| one epoch, {what} | " + " | ".join(cells) + " |")
    cells = []
    for d in devices:
        cells += [fastest_text(records, d), ""]
    lines.append("| fastest pipeline | " + " | ".join(cells) + " |")
    note = wrong_data_sentence(records)
    return "\n".join(lines) + (f"\n\n{note}" if note else "")


def _slowdown(records, device) -> str | None:
    lesson, classic = best_hdf5(records, device), find(records, device, "classic")
    if not (lesson and classic):
        return None
    return (versus("the classic pipeline", rate_summary(classic),
                   f"the lesson's HDF5 pipeline with the highest median (`{lesson['pipeline']}`)",
                   rate_summary(lesson))
            + f": {rate_summary_text(rate_summary(classic))} against "
            f"{rate_summary_text(rate_summary(lesson))}")


SETTING_NAMES = {"precision": "precision", "jit": "XLA compilation", "spe": "steps per execution",
                 "batch": "batch size"}


def _setting_name(record) -> str:
    group = record["group"]
    if group == "precision":
        return record["precision"].replace("_", " ")
    if group == "jit":
        return "XLA off" if record["jit_compile"] is False else "XLA on"
    if group == "spe":
        return f"{record['steps_per_execution']} steps per execution"
    return f"batch {record['batch_size']:,}"




def _settings_sentence(records) -> str:
    """The settings sweep in short sentences: the base, each setting that differs measurably
    from it, and the others named together (the figure gives their numbers)."""
    device = sweep_device(records)
    swept = [r for r in shown(records) if r.get("device_kind") == device
             and r.get("group") in SETTING_NAMES]
    if not swept:
        return ""
    pipeline = swept[0]["pipeline"]
    base = find(records, device, pipeline)
    start = f"On the {device.upper()}, one setting was changed at a time on `{pipeline}`"
    if not base:
        parts = [f"{_setting_name(r)} {rate_summary_text(rate_summary(r))}." for r in swept]
        return start + ". " + " ".join(p[0].upper() + p[1:] for p in parts)
    base_rate = rate_summary(base)
    sentences = [start + f"; the base (float32, XLA on, one step per execution, batch "
                 f"{base['batch_size']:,}) trained at {rate_summary_text(base_rate)}."]
    same = []
    for r in swept:
        verdict = compare(rate_summary(r), base_rate, higher_is_better=True)
        if verdict.measurable:
            name = _setting_name(r)
            sentences.append(f"{name[0].upper() + name[1:]}: "
                             f"{rate_summary_text(rate_summary(r))}, {verdict.sentence}.")
        else:
            same.append(r)
    if same:
        once = min(rate_summary(r)["n"] for r in [*same, base]) < 2
        sentences.append(f"The lesson's rule finds {NO_DIFFERENCE} from the base for "
                         + _listed([_setting_name(r) for r in same])
                         + (" (a setting or the base was timed once, with no range)." if once
                            else " (their ranges overlap)."))
    batch = {f"{r['batch_size']:,}": rate_summary(r) for r in swept if r["group"] == "batch"}
    if batch:
        batch[f"{base['batch_size']:,}"] = base_rate
        sentences.append("The fastest batch size: " + best_text(batch, higher_is_better=True)
                         + ".")
    return " ".join(sentences) + " The second figure shows every setting with its range."


def _listed(names) -> str:
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]


def findings(records) -> str:
    """What the reference run shows, in sentences, from whatever it has."""
    if not records:
        return ""
    sentences = []
    cpu = _slowdown(records, "cpu")
    if cpu:
        sentences.append(f"On the CPU, {cpu}.")
    checks = targets(records)
    if checks:
        device = find(records, "gpu", "device")
        lesson = find(records, "gpu", checks["pipeline"])
        against = versus(f"`{checks['pipeline']}`", rate_summary(lesson),
                         "device-resident data", rate_summary(device))
        sentences += [
            f"On the GPU, the lesson's HDF5 pipeline with the highest median "
            f"(`{checks['pipeline']}`) reached **{checks['share']:.0%}** of the median rate of "
            f"device-resident data.",
            f"In the lesson's words, {against}.",
            f"One epoch of {checks['n_images']:,} images took "
            f"**{seconds_text(checks['epoch_seconds'])}** (median; on the device: "
            f"{seconds_text(device['full_epoch_seconds'])}).",
            f"The lesson's goals are at least {TARGET_SHARE:.0%} and at most "
            f"{TARGET_EPOCH_SECONDS:g} second; the check: {targets_text(checks)}."]
        gpu = _slowdown(records, "gpu")
        if gpu:
            sentences.append(f"On the GPU, {gpu}.")
        lesson_gpu, lesson_cpu = find(records, "gpu", "lesson"), find(records, "cpu", "lesson")
        if lesson_gpu and lesson_cpu:
            clause = versus("the GPU", rate_summary(lesson_gpu), "the CPU",
                            rate_summary(lesson_cpu))
            sentences.append(f"From the lesson's pipeline, {clause}.")
    settings = _settings_sentence(records)
    return " ".join(sentences) + ("\n\n" + settings if settings else "")


def _scaled(summary: dict, factor: float) -> dict:
    return {**summary, **{k: summary[k] * factor for k in ("median", "min", "max")},
            "samples": [v * factor for v in summary["samples"]]}


def loader_verdict(train: dict, loader: dict) -> str:
    """Whether a pipeline's loader alone left the model waiting, by the rule's comparison of the
    loader's rate with :data:`LOADER_MARGIN` times the training rate: "ahead" (the loader is
    measurably faster than that), "waiting" (measurably slower) or "unclear" (their ranges
    overlap, or either was timed once)."""
    verdict = compare(rate_summary(loader), _scaled(rate_summary(train), LOADER_MARGIN),
                      higher_is_better=True)
    if not verdict.measurable:
        return "unclear"
    return "ahead" if verdict.word == "faster" else "waiting"


def _names(names) -> str:
    quoted_names = [quoted(n) for n in names]
    return ", ".join(quoted_names[:-1]) + (" and " if len(names) > 1 else "") + quoted_names[-1]


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    parts = []
    for device in DEVICES:
        rows = [(find(records, device, p), find(records, device, p, "loader"))
                for p in PIPELINES]
        rows = [(t, ld) for t, ld in rows if t and ld]
        if not rows:
            continue
        verdicts = {t["pipeline"]: loader_verdict(t, ld) for t, ld in rows}
        text = f"On the {device.upper()}, the fastest pipeline was {fastest_text(records, device)}. "
        found = []
        waiting = [p for p, v in verdicts.items() if v == "waiting"]
        ahead = [p for p, v in verdicts.items() if v == "ahead"]
        unclear = [(t, ld) for t, ld in rows if verdicts[t["pipeline"]] == "unclear"]
        if waiting:
            found.append(f"The loader alone of {_names(waiting)} was measurably slower than "
                         f"{LOADER_MARGIN:g} times the images per second of training from it: "
                         "those pipelines made the model wait")
        if ahead:
            found.append(f"The loader alone of {_names(ahead)} delivered measurably more than "
                         f"{LOADER_MARGIN:g} times the images per second of training from it: "
                         "there the model, not the data, set the pace")
        if unclear:
            names = [t["pipeline"] for t, _ in unclear]
            why = _why(*[rate_summary(r) for pair in unclear for r in pair], many=True)
            found.append(f"For {_names(names)} the rule cannot tell whether the loader kept "
                         f"ahead ({NO_DIFFERENCE} between the loader alone and "
                         f"{LOADER_MARGIN:g} times training: {why})")
        parts.append(text + ". ".join(found) + ".")
    if not parts:
        return "No reference run has been recorded yet."
    return "In the reference run: " + " ".join(parts)


ALT_KEYS = ("ref_feed_fig_pipelines_alt", "ref_feed_fig_settings_alt")
NO_FIGURE = "A chart without data: no reference run has been recorded yet."


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """The episode's values (``ref_feed_*``) from the reference run: its date, software and
    hardware, the table, the findings and the answer to the reading exercise; each says in
    words what the run lacks."""
    from gpulesson.experiments.feeding.figures import alt_texts

    records = reference_run(path)
    names = hardware(records)
    return {
        "ref_feed_run": records[0]["run_id"] if records else NOT_RECORDED,
        "ref_feed_date": records[0]["date"][:10] if records else NOT_RECORDED,
        "ref_feed_software": software(records) if records else NOT_RECORDED,
        "ref_feed_when": (f"{records[0]['date'][:10]}, {software(records)}" if records
                          else "none has been recorded yet"),
        "ref_feed_cpu": names.get("CPU", NOT_RECORDED),
        "ref_feed_gpu": names.get("GPU", NOT_RECORDED),
        "ref_feed_table": table(records),
        "ref_feed_findings": findings(records),  # '' without a run: the table says so
        "ref_feed_reading": reading(records),
        "ref_feed_workers": wrong_data_sentence(records)
        or "No record of the reference run was measured with a pipeline that delivered wrong data.",
        **dict(zip(ALT_KEYS, alt_texts(records) if records else (NO_FIGURE,) * 2, strict=True)),
    }

