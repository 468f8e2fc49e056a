"""The episode's ``ref_feed_*`` values, the command's table and the figure, images/s per
pipeline, from the reference run. Every ranking or comparison word is the rule's, saying which
epochs it compared; an epoch of which only the first steps were timed is shown as extrapolated.
"""

from __future__ import annotations

from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.ceiling.records import share_text
from gpulesson.experiments.common import (
    MIN_RANKED,
    NO_DIFFERENCE,
    SPREAD_NOTE,
    as_rate,
    compare_middle,
    draw_spread,
    markdown_table,
    middle,
    rank,
    reordered_by_fit,
    reordered_note,
    scale,
    summary_text,
)
from gpulesson.experiments.feeding.measure import (
    BASE,
    DATA,
    GROUP,
    HDF5_PIPELINES,
    IN_MEMORY,
    N_IMAGES,
    PIPELINES,
    RECORDS,
    TARGET_EPOCH_SECONDS,
    TARGET_SHARE,
    WORKER_PIPELINES,
    WRONG_DATA_WITH_WORKERS,
    delivered_wrong_data,
    short_setting,
)
from gpulesson.machine.devices import BACKEND_TITLES
from gpulesson.records import parts
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import listed, met, middle_note, none_yet, recorded_by
from gpulesson.records.results import NOT_RECORDED, data_label, hardware, software
from gpulesson.records.results import duration as seconds_text
from gpulesson.records.summaries import fmt_number as rate_text

DEVICES = ("cpu", "gpu")
RECORD_COMMAND = "python -m gpulesson.experiments.feeding"
STREAM = "lesson-ahead"  # the lesson's stream: its generator reading ahead (episode 4)
# Short row names of the page's table.
ROWS = {
    "classic": "classic (gzip, guessed chunks, reads all to count)",
    "lesson": "lesson, uncompressed",
    "lesson-ahead": "lesson, uncompressed, reading ahead",
    "lesson-ahead-window1": "lesson, uncompressed, reading ahead, window=1",
    "lesson-lzf": "lesson, lzf",
    "lesson-gzip": "lesson, gzip",
    "lesson-workers": "lesson, uncompressed, Keras workers",
    "lesson-gzip-workers": "lesson, gzip, Keras workers",
    "ram": "whole data set in RAM",
    "device": "data resident on the device",
}
ALT_KEYS = ("ref_feed_fig_pipelines_alt",)
FIGURES = ("feeding-pipelines.svg",)
# A loader alone under this many times training's rate leaves the model waiting, where reading
# overlaps the steps (the margin absorbs the spread and the loader's share of the CPU).
LOADER_MARGIN = 1.5
# What the answer says of the pipelines of each verdict of :func:`input_verdict`.
SAID = {
    "waiting": "Training from {names} was measurably slower than from {memory} ({versus}), and "
               "the loader alone was not measurably faster than {margin:g} times training: "
               "those loaders made the model wait.",
    "adds": "Training from {names} was measurably slower than from {memory} ({versus}), "
            "although the loader alone was more than {margin:g} times faster than training: "
            "reading did not overlap the steps, so its time added to each one. The data set "
            "the pace.",
    "faster": "Training from {names} was measurably faster than from {memory} ({versus}): the "
              "data did not hold the model back.",
    "keeps up": "Training from {names} showed {none} from {memory}: the model set the pace.",
    "unclear": "For {names} the rule cannot tell ({why}).",
}
BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
COLOURS = {"cpu": "tab:blue", "gpu": "tab:orange"}
MODES = {"train": ("training (model.fit)", {"hatch": "", "alpha": 1.0}),
         "loader": ("loader alone (no model)", {"hatch": "//", "alpha": 0.45})}


def rate_summary(record: dict | None) -> dict | None:
    """A record's images per second as a summary of the images its epochs timed."""
    summary = RECORDS.epoch_summary(record)
    return as_rate(summary, record["images_per_epoch"]) if summary else None


def find(records, device: str, pipeline: str, mode: str = "train") -> dict | None:
    """The shown record of ``pipeline`` on ``device`` in ``mode``, training in the base setting."""
    return RECORDS.find(records, device_kind=device, mode=mode, pipeline=pipeline,
                        group="pipelines", **(BASE if mode == "train" else {}))


def _trained(records, device: str, names=PIPELINES) -> dict[str, dict]:
    return {name: found for name in names if (found := find(records, device, name))}


def ranking(records, device: str) -> list[list[str]]:
    """The pipelines in places by training rate, best first, by the rule's ranking of their
    middle epochs: the one ranking the table, the reading exercise and the alt text say."""
    rates = {name: middle(rate_summary(r)) for name, r in _trained(records, device).items()}
    return rank(rates, higher_is_better=True) if rates else []


def best_pipeline(records, device: str) -> str | None:
    """The pipeline with the highest median training rate (a choice, not a ranking)."""
    rates = {name: rate_summary(r)["median"] for name, r in _trained(records, device).items()}
    return max(rates, key=rates.get) if rates else None


def fastest_in_memory(records, device: str, names=IN_MEMORY) -> dict | None:
    """The fastest training record from memory (or of ``names``) on ``device``."""
    found = _trained(records, device, names).values()
    return max(found, key=lambda r: rate_summary(r)["median"]) if found else None


def targets(records) -> dict | None:
    """The lesson's goals checked on the GPU: the fastest HDF5 pipeline's share of the fastest
    path from memory, and its time for an epoch of all images; None without both."""
    lesson, top = fastest_in_memory(records, "gpu", HDF5_PIPELINES), fastest_in_memory(records, "gpu")
    if lesson is None or top is None:
        return None
    share, epoch = lesson["images_per_second"] / top["images_per_second"], lesson["full_epoch_seconds"]
    return {"pipeline": lesson["pipeline"], "reference": top["pipeline"], "share": share,
            "share_ok": share >= TARGET_SHARE, "epoch_seconds": epoch,
            "epoch_ok": epoch <= TARGET_EPOCH_SECONDS, "full_size": lesson["n_images"] >= N_IMAGES,
            "record": lesson}


def basis(*summaries) -> str:
    """Which repeats the rule compared: "middle three of five epochs", or "all epochs"."""
    note = middle_note(*summaries)
    return "all epochs" if note.startswith("all ") else note


def _why(*summaries, many: bool = False) -> str:
    """Why the rule cannot tell ``summaries`` apart (``many``: said of several pairs)."""
    least = min(s["n"] for s in summaries)
    if least < MIN_RANKED:
        who = "some were" if many else "one of them was"
        return f"{who} timed once, with no range" if least == 1 else "too few timed repeats"
    said = basis(*summaries)
    return "their ranges overlap" if said.startswith("all ") else f"the ranges of their {said} overlap"


def fastest_text(records, device: str, quote=lambda name: f"`{name}`") -> str:
    """The first place of :func:`ranking` in the rule's words: one name, or several with the
    note that the rule cannot tell them apart."""
    places = ranking(records, device)
    if not places:
        return "not measured"
    first = places[0]
    if len(first) == 1:
        return quote(first[0])
    chosen = [rate_summary(find(records, device, n)) for n in first]
    why = (_why(*chosen, many=True) if min(r["n"] for r in chosen) < MIN_RANKED
           else basis(*chosen))
    return (f"{listed(map(quote, first))} ({NO_DIFFERENCE} from {quote(first[0])}, the highest "
            f"median; {why})")


def extrapolated(record: dict) -> str:
    return f"extrapolated from {record['steps']} of {record['full_epoch_steps']} steps"


def epoch_text(record: dict, median: bool = False) -> str:
    """A record's time for an epoch of all its images (with its range, or its ``median``),
    partial epochs scaled up and marked as extrapolated."""
    full = scale(RECORDS.epoch_summary(record), record["n_images"] / record["images_per_epoch"])
    if median:
        said = seconds_text(full["median"])
        return f"≈ {said} ({extrapolated(record)})" if record["partial_epoch"] else said
    said = summary_text(full, seconds_text)
    return f"≈ {said}, {extrapolated(record)}" if record["partial_epoch"] else said


def versus(a_name: str, a: dict, b_name: str, b: dict, verb: str = "trained") -> str:
    """Rate ``a`` against rate ``b`` as a clause in the rule's words, saying on which epochs."""
    verdict = compare_middle(a, b, higher_is_better=True)
    if verdict.measurable:
        return f"{a_name} {verb} {verdict.text} {b_name} ({basis(a, b)} apart)"
    return f"the lesson's rule finds {NO_DIFFERENCE} between {a_name} and {b_name} ({_why(a, b)})"


def targets_text(checks: dict) -> str:
    record = checks["record"]
    share, epoch = met(checks["share_ok"]), met(checks["epoch_ok"])
    took = (f"≈ {checks['epoch_seconds']:.2f} s, {extrapolated(record)}"
            if record["partial_epoch"] else f"{checks['epoch_seconds']:.2f} s, measured")
    size = "" if checks["full_size"] else f" (only {record['n_images']:,} images: not the goal's size)"
    return (f"{checks['pipeline']}: {share_text(checks['share'])} of `{checks['reference']}`, the "
            f"fastest path from memory (goal {TARGET_SHARE:.0%}: {share}); one epoch "
            f"{took} (goal {TARGET_EPOCH_SECONDS:g} s: {epoch}){size}")


def _left_out(records) -> list[str]:
    """The pipelines of ``records`` that delivered wrong data, in the order of PIPELINES."""
    return sorted({r["pipeline"] for r in records if delivered_wrong_data(r)},
                  key=list(PIPELINES).index)


def wrong_data_sentence(records) -> str:
    """Which pipelines are left out because they delivered wrong data, or ''."""
    wrong = [r for r in records if delivered_wrong_data(r)]
    if not wrong:
        return ""
    backends = " and ".join(sorted({BACKEND_TITLES.get(r["backend"], r["backend"])
                                    for r in wrong}))
    names = " and ".join(f"`{name}`" for name in _left_out(records))
    return (f"The run also timed {names} with Keras worker processes on {backends}, where they "
            "delivered batches of earlier epochs: those rates are kept in the results file "
            "but not shown.")


def run_lines(records) -> list[str]:
    """One line per device and run: the run, its date, the machine and the software."""
    found: dict[tuple[str, str], list[dict]] = {}
    for r in records:
        found.setdefault((r["device_kind"], r["run_id"]), []).append(r)
    return [f"{device.upper()}: run {run_id} of {part[0]['date'][:10]} on "
            f"{parts.machine(part)}, with {software(part)}"
            for (device, run_id), part in found.items()]


def describe(records) -> str:
    """The command's table of one run: images/s and epoch time (median, range, timed epochs)
    per record, a "*" marking partial epochs."""
    if not records:
        return "No run recorded."
    lines = [data_label(records)] + [f"  {line}" for line in run_lines(records)]
    lines.append(f"{'dev':3} {'pipeline':19} {'setting':14} {'batch':>5} {'img/s':>8} "
                 f"{'epoch s (range)':>23} n")
    partial = {(r["steps"], r["full_epoch_steps"]) for r in records if r["partial_epoch"]}
    for r in records:
        epochs = RECORDS.epoch_summary(r)
        lines.append(
            f"{r['device_kind']:3} {r['pipeline']:19} {short_setting(r):14} {r['batch_size']:>5} "
            f"{rate_text(rate_summary(r)['median']):>8} {epochs['median']:>7.3f} "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}) {epochs['n']}"
            f"{'*' if r['partial_epoch'] else ''}"
            f"{' WRONG DATA' if delivered_wrong_data(r) else ''}"
            + (f" {r['layout']}" if r.get("layout") else ""))
    for steps in sorted({steps for steps, _ in partial}):
        fulls = sorted(full for timed, full in partial if timed == steps)
        of = f"{fulls[0]}" if len(fulls) == 1 else f"{fulls[0]}-{fulls[-1]}"
        lines.append(f"* partial epochs: the first {steps} steps timed (of {of} an epoch)")
    if any(delivered_wrong_data(r) for r in records):
        lines.append("WRONG DATA: Keras worker processes on this backend delivered batches of "
                     "earlier epochs; the rate is not valid.")
    checks = targets(records)
    return "\n".join(lines + ([targets_text(checks)] if checks else []))


def _rate_cell(record, pipeline: str | None = None, backend: str | None = None) -> str:
    if record:
        return summary_text(rate_summary(record), rate_text)
    if pipeline in WORKER_PIPELINES and backend in WRONG_DATA_WITH_WORKERS:
        return "TensorFlow only"
    return "not measured"


def table(records) -> str:
    """The reference run as a Markdown table: training and the loader alone on each device it
    has, a row per shown pipeline, epoch times and the fastest pipeline in the rule's words."""
    if not records:
        return none_yet("reference run", RECORD_COMMAND,
                        " (the instructor note gives the whole command)")
    names = hardware(records)
    backends = {d: next(r["backend"] for r in records if r["device_kind"] == d) for d in DEVICES
                if any(r.get("device_kind") == d for r in RECORDS.visible(records))}
    header = [title for d, backend in backends.items() for title in (
        f"{d.upper()}: {names[d.upper()]} ({BACKEND_TITLES.get(backend, backend)}), training",
        f"{d.upper()}: loader alone")]
    rows = [[ROWS[pipeline], *(_rate_cell(find(records, d, pipeline, mode), pipeline, backend)
                               for d, backend in backends.items() for mode in ("train", "loader"))]
            for pipeline in PIPELINES if any(find(records, d, pipeline) for d in backends)]
    for pipeline, what in (("classic", "classic"), ("lesson", "lesson (uncompressed)"),
                           ("device", "on the device")):
        found = [find(records, d, pipeline) for d in backends]
        if any(found):
            rows.append([f"one epoch, {what}", *(cell for c in found for cell in (
                epoch_text(c) if c else "not measured", ""))])
    rows.append(["fastest pipeline", *(cell for d in backends
                                       for cell in (fastest_text(records, d), ""))])
    note = wrong_data_sentence(records)
    return markdown_table(["pipeline", *header], rows) + (f"\n\n{note}" if note else "")


def _rates(records, device: str, a: str, b: dict | None) -> tuple:
    return rate_summary(find(records, device, a)), rate_summary(b)


def findings(records, cnn_path=None) -> str:
    """What the reference run shows, in sentences; ``cnn_path``: episode 5's results file."""
    if not records:
        return ""
    slowdown = {}
    for device in DEVICES:
        lesson = fastest_in_memory(records, device, HDF5_PIPELINES)
        classic = find(records, device, "classic")
        if lesson and classic:
            slowdown[device] = versus("the classic pipeline", rate_summary(classic),
                                      f"`{lesson['pipeline']}`", rate_summary(lesson))
    checks = targets(records)
    if not checks:
        return f"On the CPU, {slowdown['cpu']}." if "cpu" in slowdown else ""
    top, lesson = fastest_in_memory(records, "gpu"), checks["record"]
    against = versus(f"`{checks['pipeline']}`", rate_summary(lesson), f"`{top['pipeline']}`",
                     rate_summary(top))
    sentences = [
        f"On the GPU, `{checks['pipeline']}`, the lesson's fastest HDF5 pipeline, reached "
        f"**{share_text(checks['share'])}** of the rate of `{top['pipeline']}`, the fastest "
        f"path from memory in the same run: {against}.",
        f"One epoch of {lesson['n_images']:,} images "
        f"{'would take' if lesson['partial_epoch'] else 'took'} "
        f"**{epoch_text(lesson, median=True)}** (median; from `{top['pipeline']}`: "
        f"{epoch_text(top, median=True)}).",
        f"The goals: at least {TARGET_SHARE:.0%} ({met(checks['share_ok'])}), at most "
        f"{TARGET_EPOCH_SECONDS:g} s an epoch ({met(checks['epoch_ok'])}"
        f"{', extrapolated from the timed steps' if lesson['partial_epoch'] else ''}).",
        episode5_note(records, cnn_path)]
    if "gpu" in slowdown:
        sentences.append(f"On the GPU, {slowdown['gpu']}.")
    lesson_gpu, lesson_cpu = find(records, "gpu", "lesson"), find(records, "cpu", "lesson")
    if lesson_gpu and lesson_cpu and lesson_gpu["run_id"] == lesson_cpu["run_id"]:
        clause = versus("the GPU", rate_summary(lesson_gpu), "the CPU", rate_summary(lesson_cpu))
        sentences.append(f"From the lesson's pipeline, {clause}.")
    return " ".join(filter(None, sentences))


def episode5_note(records, cnn_path=None) -> str:
    """Episode 5's run of the same CNN and generator on the same GPU, backend and batch size
    beside this run's ``lesson``, in the rule's words; '' where episode 5 has no such run."""
    from gpulesson.experiments.cnn.measure import RECORDS as CNN  # read only: episode 5's records

    lesson = find(records, "gpu", "lesson")
    if not lesson or cnn_path is None:
        return ""
    theirs = next((r for r in CNN.newest_run(cnn_path) if r.get("device_kind") == "gpu"
                   and (r.get("gpu") or {}).get("name") == (lesson.get("gpu") or {}).get("name")
                   and r.get("backend") == lesson.get("backend")
                   and r.get("batch_size") == lesson.get("batch_size")), None)
    summary = CNN.epoch_summary(theirs)
    if not summary:
        return ""
    rate, ours = as_rate(summary, theirs["n_train"]), rate_summary(lesson)
    said = compare_middle(rate, ours, higher_is_better=True)
    same = parts.machine([theirs]) == parts.machine([lesson])
    data = "" if data_label([theirs]) == data_label([lesson]) else f" on the {data_label([theirs])}"
    measured = (f"Episode 5's run of the same model and generator "
                f"{'on the same hardware' if same else f'on {parts.machine([theirs])}'}{data} "
                f"({BACKEND_TITLES.get(theirs['backend'], theirs['backend'])}, batch "
                f"{theirs['batch_size']}, run {theirs['run_id']}) measured "
                f"{rate_text(rate['median'])} images/s (epochs of {theirs['n_train']:,} images, "
                f"median {seconds_text(summary['median'])})")
    if not said.measurable:
        return f"{measured}: {NO_DIFFERENCE} from `lesson` here ({_why(rate, ours)})."
    cause = ("One known difference: this run's `fit` reordered the generator's batches, "
             "episode 5's did not." if reordered_by_fit(lesson) else
             "Both kept the generator's order; no other difference in method is known.")
    # The comparison's words give its size only from a certain size on; else say it here.
    factor = max(said.ratio, 1 / said.ratio)
    by = "" if said.text != f"{said.word} than" else f", by a factor of {factor:.2g}"
    return f"{measured}: {said.text} `lesson` here{by} ({basis(rate, ours)} apart). {cause}"


def gpu_peaks_text(records) -> str:
    """The published dense peaks of the reference run's GPU, or a pointer to the table."""
    from gpulesson.machine.gpu_peaks import peaks_for

    name = hardware(records).get("GPU")
    peaks = peaks_for(name)
    if not peaks:
        return ("your GPU's published peaks (`gpulesson.machine.gpu_peaks` has those of the cards the "
                "lesson was measured on; episode 5 sets the CNN's rate beside them)")
    return (f"the {name}'s published dense peaks, {peaks['fp32']:g} TFLOP/s in FP32, "
            f"{peaks['tf32']:g} in TF32 and {peaks['bf16']:g} in BF16 (the vendor's data sheet, "
            "not measurements; episode 5 sets the CNN's rate beside them)")


# The reading exercise: training from a pipeline against the fastest path from memory decides
# whether the data cost time (:func:`input_verdict`); the loader alone says why.
def loader_verdict(train: dict, loader: dict) -> str:
    """"ahead", "waiting" or "unclear": the loader's rate against :data:`LOADER_MARGIN` times
    training's, assuming that reading overlaps the steps."""
    rate = rate_summary(train)
    scaled = {**rate, **{k: rate[k] * LOADER_MARGIN for k in ("median", "min", "max")},
              "samples": [v * LOADER_MARGIN for v in rate["samples"]]}
    verdict = compare_middle(rate_summary(loader), scaled, higher_is_better=True)
    if not verdict.measurable:
        return "unclear"
    return "ahead" if verdict.word == "faster" else "waiting"


def input_verdict(train: dict, loader: dict | None, top: dict) -> str:
    """Training from a pipeline against ``top``, the fastest from memory: "waiting" (measurably
    slower, the loader not ahead), "adds" (slower although the loader was ahead: reading did
    not overlap the steps), "faster", "keeps up" (no measurable difference) or "unclear"."""
    said = compare_middle(rate_summary(train), rate_summary(top), higher_is_better=True)
    if min(rate_summary(train)["n"], rate_summary(top)["n"]) < MIN_RANKED:
        return "unclear"
    if not said.measurable:
        return "keeps up"
    if said.word == "faster":
        return "faster"
    if loader is not None and loader_verdict(train, loader) == "ahead":
        return "adds"
    return "waiting"


def device_reading(records, device: str) -> str:
    """The answer for one device: its fastest pipeline, and whether training waited for each
    pipeline that reads data."""
    top = fastest_in_memory(records, device)
    reading = [p for p in PIPELINES if p not in IN_MEMORY and find(records, device, p)]
    if not top or not reading:
        return ""
    memory = f"`{top['pipeline']}`"
    text = [f"On the {device.upper()}, the fastest pipeline was "
            f"{fastest_text(records, device)}; the fastest from memory, {memory}."]
    verdicts = {p: input_verdict(find(records, device, p), find(records, device, p, "loader"),
                                 top) for p in reading}
    for verdict, said in SAID.items():
        names = [p for p in reading if verdicts[p] == verdict]
        if not names:
            continue
        rates = [rate_summary(find(records, device, p)) for p in names]
        versus = ", ".join(f"`{n}` " + compare_middle(
            rate, rate_summary(top), higher_is_better=True).sentence
            for n, rate in zip(names, rates, strict=True))
        why = _why(*rates, rate_summary(top), many=True) if verdict == "unclear" else ""
        text.append(said.format(names=listed(f"`{n}`" for n in names), memory=memory,
                                versus=versus, margin=LOADER_MARGIN, none=NO_DIFFERENCE, why=why))
    return " ".join(text)


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    found = [said for device in DEVICES if (said := device_reading(records, device))]
    if not found:
        return "No reference run has been recorded yet."
    rates = [rate_summary(r) for device in DEVICES for r in _trained(records, device).values()]
    return (f"In the reference run{'s' if len(found) > 1 else ''}, every comparison reads the "
            f"{basis(*rates)} of each pipeline. " + " ".join(found))


def stream_goals(records, path=RECORDS.results_file) -> str:
    """The stream's goals: on the reference run's GPU, ``lesson-ahead`` at least
    :data:`TARGET_SHARE` of ``ram``; on a CPU, not measurably slower than ``lesson`` in every
    run of ``path`` that trained both (naming which ran first: a busy machine drifts)."""
    goal = f"at least {TARGET_SHARE:.0%} of `ram` on the GPU"
    stream, ram = find(records, "gpu", STREAM), find(records, "gpu", "ram")
    if stream and ram:
        ratio = stream["images_per_second"] / ram["images_per_second"]
        said = [f"The stream's goals: {goal}, at batch {stream['batch_size']} in "
                f"{stream['precision']}: {share_text(ratio)} in run {stream['run_id']} "
                f"({met(ratio >= TARGET_SHARE)})."]
    else:
        said = [f"The stream's goals: {goal}, which has not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --devices gpu')}."]
    cpu = []
    for run_id, run in RECORDS.runs_in(path).items():
        pair = {r["pipeline"]: r for r in run if r.get("device_kind") == "cpu"
                and r.get("mode") == "train" and r.get("group") == "pipelines"
                and r["pipeline"] in ("lesson", STREAM)}
        if len(pair) == 2:
            first = next(r["pipeline"] for r in run if r["pipeline"] in pair)
            ahead, lesson = rate_summary(pair[STREAM]), rate_summary(pair["lesson"])
            verdict = compare_middle(ahead, lesson, higher_is_better=True)
            busy = max(r.get("other_programs_cpu_share") or 0 for r in pair.values())
            cpu.append(f"Run {run_id} (`{first}` first; others used up to {busy:.0%} of the "
                       f"CPU): {verdict.sentence}, {met(not (verdict.measurable and verdict.ratio < 1))} "
                       f"({basis(ahead, lesson)}).")
    said.append(f"On a CPU, the goal is `{STREAM}` no slower than `lesson`" + (
        ". " + " ".join(cpu) if cpu else ", which has not been recorded yet "
        + recorded_by(f"{RECORD_COMMAND} --devices cpu --pipelines lesson {STREAM}") + "."))
    return " ".join(said)


def chunks_text(path=RECORDS.results_file) -> str:
    """The newest run's chunk shapes and chunk cache: each layout's rate read alone."""
    found = [run for run in RECORDS.runs_in(path).values()
             if any(r.get("group") == GROUP for r in run)]
    if not found:
        return ("The chunk shapes and the chunk cache have not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --chunks', 'them')}.")
    rows = [r for r in found[-1] if r.get("group") == GROUP]
    head = ["file layout", "images/s read alone: median (range)"]
    return (f"On the {parts.machine(rows)} (run {rows[0]['run_id']}), the generator read alone, "
            f"a window of {rows[0]['window']} blocks:\n\n" + markdown_table(head, [
                [r["layout"], _rate_cell(r)] for r in rows]))


def substitutions(path=RECORDS.results_file) -> dict[str, str]:
    """The episode's values (``ref_feed_*``); episode 5's results file beside ``path`` gives
    the run this page sets beside its own."""
    from gpulesson.experiments.cnn.measure import RECORDS as CNN

    path = Path(path)
    records = RECORDS.reference_run(path)
    names = hardware(records)
    provenance = (" ".join(f"{line}." for line in run_lines(records))
                  + " The records are in `results/feeding.jsonl`.")
    return {
        "ref_feed_when": provenance if records else "No reference run has been recorded yet.",
        # The data every CNN number of the page was measured on, named where they are shown.
        "ref_feed_data": data_label(records) if records else LABELS[DATA],
        "ref_feed_goal_gpu": (f"the reference run's GPU ({names['GPU']})" if "GPU" in names
                              else "a data-centre GPU (none is recorded in the reference run "
                                   "yet)"),
        "ref_feed_peaks": gpu_peaks_text(records),
        "ref_feed_gpu": names.get("GPU", NOT_RECORDED),
        "ref_feed_table": table(records),
        "ref_feed_findings": findings(records, path.with_name(CNN.results_file.name)),
        "ref_feed_order": reordered_note(
            [r for r in records if r.get("pipeline") in HDF5_PIPELINES and r.get("mode") == "train"],
            "the batches of the `lesson` pipelines"),
        "ref_feed_reading": reading(records),
        "ref_feed_stream": stream_goals(records, path),
        "ref_feed_chunks": chunks_text(path),
        "ref_feed_fig_pipelines_alt": (pipelines_alt(records) if records else
                                       "A chart without data: no reference run has been "
                                       "recorded yet."),
    }


def _repeats_words(counts) -> str:
    counts = sorted(set(counts))
    if not counts:
        return "no"
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def pipeline_panels(records) -> tuple[list[str], list[str], dict]:
    """``(devices, pipelines in row order, {(device, pipeline, mode): record})`` to draw: so
    that the alt text names only what is drawn."""
    devices = [d for d in COLOURS if any(r["device_kind"] == d for r in RECORDS.visible(records))]
    bars = {(device, pipeline, mode): record for device in devices for pipeline in PIPELINES
            for mode in MODES if (record := find(records, device, pipeline, mode)) is not None}
    return devices, [p for p in PIPELINES if any(key[1] == p for key in bars)], bars


def figures(records):
    """One panel per device, one row per pipeline: training solid, the loader alone hatched;
    a note names the pipelines left out because they delivered wrong data."""
    import numpy as np

    need(records, "run the benchmark first")
    devices, order, bars = pipeline_panels(records)
    need(devices, "every record delivered wrong data")
    fig, axes = panels(len(devices), (9 if len(devices) == 1 else 13, 6.4), across=True,
                       sharey=True)
    for ax, device in zip(axes, devices, strict=True):
        for (offset, mode), (label, style) in zip(((-0.2, "train"), (0.2, "loader")),
                                                  MODES.values(), strict=True):
            for i, pipeline in enumerate(order):
                record = bars.get((device, pipeline, mode))
                if record is None:
                    continue
                rate = rate_summary(record)
                ax.barh(i + offset, rate["median"], height=0.38, color=COLOURS[device],
                        edgecolor="black", label=label, **style)
                draw_spread(ax, [i + offset], [rate], horizontal=True)
                label = None
                text = (f"{rate_text(rate['median'])}/s"
                        + (f" ({record['steps']} steps)" if record["partial_epoch"] else "")
                        + (" *" if _busy(record) else ""))
                ax.annotate(f"{mode} {text}", (rate["max"], i + offset), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=7)
        ax.set_title(f"{device.upper()}", fontsize=10)
        ax.set_xscale("log")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        counts = [rate_summary(r)["n"] for (d, _, _), r in bars.items() if d == device]
        ax.set_xlabel(f"images per second (log scale)\n{SPREAD_NOTE}\n"
                      f"timed epochs per bar: {_repeats_words(counts)}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.margins(x=0.35)
    axes[0].set_yticks(np.arange(len(order)),
                       [PIPELINES[p].replace(", ", ",\n", 1) for p in order], fontsize=8)
    axes[0].invert_yaxis()
    base = next((r for r in records if r.get("group") == "pipelines"), records[0])
    drawn = []
    for device in devices:  # the devices may come from different runs
        part = [r for r in records if r["device_kind"] == device and r.get("part") is None]
        part = [r for r in part if r["run_id"] == part[0]["run_id"]]
        drawn.append(f"{device.upper()}: {parts.machine(part)}, {software(part)}, run {part[0]['run_id']}")
    title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
               f" {base['n_images']:,} images)", records, *drawn)
    fig.tight_layout()
    if any(_busy(r) for r in bars.values()):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")
    if left_out := _left_out(records):
        fig.text(0.01, -0.03, f"Left out: {', '.join(left_out)} (Keras worker processes on "
                 f"the {records[0]['backend']} backend delivered batches of earlier epochs; "
                 "the records stay in the results file)", fontsize=8, style="italic",
                 va="bottom")
    return (fig,)


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def pipelines_alt(records) -> str:
    """The alt text of the figure, from what :func:`figures` draws."""
    devices, order, bars = pipeline_panels(records)
    if not devices:
        return "Chart without bars: every record of the run delivered wrong data."
    names = hardware(records)
    drawn = " and ".join(f"the {d.upper()} ({names.get(d.upper(), NOT_RECORDED)})" for d in devices)
    counts = {mode: [rate_summary(r)["n"] for k, r in bars.items() if k[2] == mode] for mode in MODES}
    said = [f"Horizontal bars on a logarithmic axis of images per second, "
            f"{'one panel' if len(devices) == 1 else 'one panel each'} for {drawn}, one row "
            f"per input pipeline: {', '.join(order)}. Each row has a solid bar for training "
            "with model.fit and a paler hatched bar for the loader alone, each at the median of "
            f"its timed epochs ({_repeats_words(counts['train'])} for training, "
            f"{_repeats_words(counts['loader'])} for the loader alone), with whiskers from the "
            "slowest to the fastest epoch and a dot for each epoch, and labelled with its "
            "median."]
    for device in devices:
        train = {p: rate_summary(bars[(device, p, "train")])["median"] for p in order
                 if (device, p, "train") in bars}
        if train:
            low, high = min(train, key=train.get), max(train, key=train.get)
            said.append(f"{device.upper()} training medians: from {rate_text(train[low])} "
                        f"images/s ({low}) to {rate_text(train[high])} images/s ({high}); "
                        f"fastest by the lesson's rule: {fastest_text(records, device, str)}.")
    partial = sorted({r["steps"] for r in bars.values() if r["partial_epoch"]})
    if partial:
        said.append(f"Only the first {' or '.join(map(str, partial))} batches of each epoch "
                    "were timed where a bar says so.")
    if left_out := _left_out(records):
        said.append(f"A note under the bars names the pipelines left out because they "
                    f"delivered wrong data: {', '.join(left_out)}.")
    return " ".join(said)
