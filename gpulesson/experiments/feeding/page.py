"""The episode's ``ref_feed_*`` values, the command's table and the figure, images/s per
pipeline, from the reference run. Every ranking or comparison word is the rule's, saying which
epochs it compared; an epoch of which only the first steps were timed is shown as extrapolated.
"""

from pathlib import Path

from gpulesson.datasets.settings import LABELS
from gpulesson.experiments.feeding import measure as fm
from gpulesson.machine.devices import BACKEND_TITLES
from gpulesson.records import pagewords, parts, summaries
from gpulesson.records.figkit import need, panels, title
from gpulesson.records.pagewords import listed, met, none_yet, recorded_by
from gpulesson.records.results import NOT_RECORDED, data_label, hardware
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
FIGURES, FIGURE_FOLDER = ("feeding-pipelines.svg",), "fig/09-feeding-the-gpu"
# A loader alone under this many times training's rate leaves the model waiting, where reading
# overlaps the steps (the margin absorbs the spread and the loader's share of the CPU).
LOADER_MARGIN = 1.5
# What the answer says of the pipelines of each verdict of :func:`input_verdict`; "ahead" is its
# "adds" for a pipeline that read ahead (`lesson-ahead*`), where reading overlapped the steps.
SAID = {
    "waiting": "Training from {names} was measurably slower than from {memory} ({versus}), and "
               "the loader alone was not measurably faster than {margin:g} times training: "
               "those loaders made the model wait.",
    "adds": "Training from {names} was measurably slower than from {memory} ({versus}), "
            "although the loader alone was more than {margin:g} times faster than training: "
            "reading did not overlap the steps, so its time added to each one.",
    "ahead": "{names} read ahead, yet trained at only {shares} of {memory}'s rate: the records "
             "do not split why.",
    "faster": "Training from {names} was measurably faster than from {memory} ({versus}): the "
              "data did not hold the model back.",
    "keeps up": "Training from {names} showed {none} from {memory}: the model set the pace.",
    "unclear": "For {names} the rule cannot tell ({why}).",
}
BUSY = 0.25  # a measurement during which other programs used more CPU time than this is flagged
COLOURS = {"cpu": "tab:blue", "gpu": "tab:orange"}
MODES = {"train": ("training (model.fit)", {"hatch": "", "alpha": 1.0}),
         "loader": ("loader alone (no model)", {"hatch": "//", "alpha": 0.45})}


def epoch_text(record: dict, median: bool = False) -> str:
    """An epoch of all a record's images (its range, or ``median``), a partial one extrapolated."""
    full = summaries.scale(fm.RECORDS.epoch_summary(record), record["n_images"] / record["images_per_epoch"])
    said = seconds_text(full["median"]) if median else summaries.summary_text(full, seconds_text)
    if not record["partial_epoch"]:
        return said
    return f"≈ {said} ({extrapolated(record)})" if median else f"≈ {said}, {extrapolated(record)}"


def versus(a_name: str, a_record: dict, b_name: str, b_record: dict) -> str:
    """Training record ``a`` against ``b`` as a clause in the rule's words, saying on which epochs."""
    a, b = fm.rate_summary(a_record), fm.rate_summary(b_record)
    verdict = summaries.compare_middle(a, b, higher_is_better=True)
    if verdict.measurable:
        return f"{a_name} trained {verdict.text} {b_name} ({fm.basis(a, b)} apart)"
    return (f"the lesson's rule finds {summaries.NO_DIFFERENCE} between {a_name} and {b_name} "
            f"({fm.why_unclear(a, b)})")


def extrapolated(record: dict) -> str:
    return f"extrapolated from {record['steps']} of {record['full_epoch_steps']} steps"


def describe(records) -> str:
    """The command's table of a run: each record's images/s and epoch times, "*": partial."""
    if not records:
        return "No run recorded."
    lines = [data_label(records)] + [f"  {line}" for line in parts.run_labels(records)]
    lines.append(f"{'dev':3} {'pipeline':19} {'setting':14} {'batch':>5} {'img/s':>8} "
                 f"{'epoch s (range)':>23} n")
    partial = {(r["steps"], r["full_epoch_steps"]) for r in records if r["partial_epoch"]}
    for r in records:
        epochs = fm.RECORDS.epoch_summary(r)
        lines.append(
            f"{r['device_kind']:3} {r['pipeline']:19} {fm.short_setting(r):14} {r['batch_size']:>5} "
            f"{rate_text(fm.rate_summary(r)['median']):>8} {epochs['median']:>7.3f} "
            f"({epochs['min']:.3f}-{epochs['max']:.3f}) {epochs['n']}"
            f"{'*' if r['partial_epoch'] else ''}"
            + (f" {r['layout']}" if r.get("layout") else ""))
    for steps in sorted({steps for steps, _ in partial}):
        fulls = sorted(full for timed, full in partial if timed == steps)
        of = f"{fulls[0]}" if len(fulls) == 1 else f"{fulls[0]}-{fulls[-1]}"
        lines.append(f"* partial epochs: the first {steps} steps timed (of {of} an epoch)")
    checks = fm.targets(records)
    if checks:  # the goals, on the GPU
        record, seconds = checks["record"], checks["epoch_seconds"]
        took = (f"≈ {seconds:.2f} s, {extrapolated(record)}" if record["partial_epoch"]
                else f"{seconds:.2f} s, measured")
        size = ("" if checks["full_size"]
                else f" (only {record['n_images']:,} images: not the goal's size)")
        lines.append(f"{checks['pipeline']}: {share_text(checks['share'])} of `{checks['reference']}`, "
                     f"the fastest path from memory (goal {fm.TARGET_SHARE:.0%}: "
                     f"{met(checks['share_ok'])}); "
                     f"one epoch {took} (goal {fm.TARGET_EPOCH_SECONDS:g} s: "
                     f"{met(checks['epoch_ok'])}){size}")
    return "\n".join(lines)


def _rate_cell(record, pipeline: str | None = None, backend: str | None = None) -> str:
    if record:
        return summaries.summary_text(fm.rate_summary(record), rate_text)
    if pipeline in fm.WORKER_PIPELINES and backend in fm.WRONG_DATA_WITH_WORKERS:
        return "TensorFlow only"
    return "not measured"


def table(records) -> str:
    """The reference run as a Markdown table: each device's rates, epoch times and the fastest."""
    if not records:
        return none_yet("reference run", RECORD_COMMAND,
                        " (the instructor note gives the whole command)")
    names = hardware(records)
    backends = {d: next(r["backend"] for r in records if r["device_kind"] == d) for d in DEVICES
                if any(r.get("device_kind") == d for r in fm.RECORDS.visible(records))}
    header = [title for d, backend in backends.items() for title in (
        f"{d.upper()}: {names[d.upper()]} ({BACKEND_TITLES.get(backend, backend)}), training",
        f"{d.upper()}: loader alone")]
    rows = [[ROWS[pipeline], *(_rate_cell(fm.find(records, d, pipeline, mode), pipeline, backend)
                               for d, backend in backends.items() for mode in ("train", "loader"))]
            for pipeline in fm.PIPELINES if any(fm.find(records, d, pipeline) for d in backends)]
    for pipeline, what in (("classic", "classic"), ("lesson", "lesson (uncompressed)"),
                           ("device", "on the device")):
        found = [fm.find(records, d, pipeline) for d in backends]
        if any(found):
            rows.append([f"one epoch, {what}", *(cell for c in found for cell in (
                epoch_text(c) if c else "not measured", ""))])
    rows.append(["fastest pipeline", *(cell for d in backends
                                       for cell in (fm.fastest_text(records, d), ""))])
    return pagewords.markdown_table(["pipeline", *header], rows)


def share_text(ratio: float) -> str:
    return pagewords.share_text(ratio, fm.TARGET_SHARE)


def findings(records) -> str:
    """What the reference run shows, in sentences."""
    if not records:
        return ""
    slowdown = {}
    for device in DEVICES:
        lesson = fm.fastest_in_memory(records, device, fm.HDF5_PIPELINES)
        classic = fm.find(records, device, "classic")
        if lesson and classic:
            slowdown[device] = versus("the classic pipeline", classic, f"`{lesson['pipeline']}`", lesson)
    checks = fm.targets(records)
    if not checks:
        return f"On the CPU, {slowdown['cpu']}." if "cpu" in slowdown else ""
    top, lesson = fm.fastest_in_memory(records, "gpu"), checks["record"]
    against = versus(f"`{checks['pipeline']}`", lesson, f"`{top['pipeline']}`", top)
    sentences = [
        f"On the GPU, `{checks['pipeline']}`, the lesson's fastest HDF5 pipeline, reached "
        f"**{share_text(checks['share'])}** of the rate of `{top['pipeline']}`, the fastest "
        f"path from memory in the same run: {against}.",
        f"One epoch of {lesson['n_images']:,} images "
        f"{'would take' if lesson['partial_epoch'] else 'took'} "
        f"**{epoch_text(lesson, median=True)}** (median; from `{top['pipeline']}`: "
        f"{epoch_text(top, median=True)}).",
        f"The goals: at least {fm.TARGET_SHARE:.0%} ({met(checks['share_ok'])}), at most "
        f"{fm.TARGET_EPOCH_SECONDS:g} s an epoch ({met(checks['epoch_ok'])}"
        f"{', extrapolated from the timed steps' if lesson['partial_epoch'] else ''})."]
    if "gpu" in slowdown:
        sentences.append(f"On the GPU, {slowdown['gpu']}.")
    lesson_gpu, lesson_cpu = fm.find(records, "gpu", "lesson"), fm.find(records, "cpu", "lesson")
    if lesson_gpu and lesson_cpu and lesson_gpu["run_id"] == lesson_cpu["run_id"]:
        clause = versus("the GPU", lesson_gpu, "the CPU", lesson_cpu)
        sentences.append(f"From the lesson's pipeline, {clause}.")
    return " ".join(filter(None, sentences))


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


def input_verdict(train: dict, loader: dict | None, top: dict) -> str:
    """The reading exercise's verdict on training from a pipeline against ``top``, the fastest
    from memory: "waiting" (measurably slower, the loader alone not measurably faster than
    LOADER_MARGIN times training), "adds" (slower although it was), "faster", "keeps up" (no
    measurable difference) or "unclear"."""
    rate, best = fm.rate_summary(train), fm.rate_summary(top)
    said = summaries.compare_middle(rate, best, higher_is_better=True)
    if min(rate["n"], best["n"]) < summaries.MIN_RANKED:
        return "unclear"
    if not said.measurable:
        return "keeps up"
    if said.word == "faster":
        return "faster"
    ahead = loader and summaries.compare_middle(fm.rate_summary(loader), summaries.scale(
        rate, LOADER_MARGIN), higher_is_better=True)
    return "adds" if ahead and ahead.word == "faster" else "waiting"


def device_reading(records, device: str) -> str:
    """One device's answer: its fastest pipeline, and whether training waited for the data."""
    top = fm.fastest_in_memory(records, device)
    reading = [p for p in fm.PIPELINES if p not in fm.IN_MEMORY and fm.find(records, device, p)]
    if not top or not reading:
        return ""
    memory = f"`{top['pipeline']}`"
    text = [f"On the {device.upper()}, the fastest pipeline was "
            f"{fm.fastest_text(records, device)}; the fastest from memory, {memory}."]
    verdicts = {p: input_verdict(fm.find(records, device, p), fm.find(records, device, p, "loader"),
                                 top) for p in reading}
    verdicts.update({p: "ahead" for p, said in verdicts.items() if said == "adds" and "ahead" in p})
    for verdict, said in SAID.items():
        names = [p for p in reading if verdicts[p] == verdict]
        if not names:
            continue
        rates = [fm.rate_summary(fm.find(records, device, p)) for p in names]
        versus = ", ".join(f"`{n}` " + summaries.compare_middle(
            rate, fm.rate_summary(top), higher_is_better=True).sentence
            for n, rate in zip(names, rates, strict=True))
        why = fm.why_unclear(*rates, fm.rate_summary(top), many=True) if verdict == "unclear" else ""
        shares = listed(share_text(r["median"] / fm.rate_summary(top)["median"]) for r in rates)
        text.append(said.format(names=listed(f"`{n}`" for n in names), memory=memory,
                                versus=versus, margin=LOADER_MARGIN, shares=shares,
                                none=summaries.NO_DIFFERENCE, why=why))
    return " ".join(text)


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    found = [said for device in DEVICES if (said := device_reading(records, device))]
    if not found:
        return "No reference run has been recorded yet."
    rates = [fm.rate_summary(r) for device in DEVICES for r in fm.trained(records, device).values()]
    return (f"In the reference run{'s' if len(found) > 1 else ''}, every comparison reads the "
            f"{fm.basis(*rates)} of each pipeline. " + " ".join(found))


def stream_goals(records, path=fm.RECORDS.results_file) -> str:
    """The stream's goals: on the GPU at least TARGET_SHARE of ``ram``; on a CPU no slower than
    ``lesson`` in every run of ``path`` with both (which ran first: a busy machine drifts)."""
    goal = (f"on the GPU, at least {fm.TARGET_SHARE:.0%} of `ram` (a PyDataset from RAM; the "
            "ladder measures against `fit` on arrays)")
    stream, ram = fm.find(records, "gpu", STREAM), fm.find(records, "gpu", "ram")
    if stream and ram:
        ratio = stream["images_per_second"] / ram["images_per_second"]
        said = [f"The stream's goals: {goal}, at batch {stream['batch_size']} in "
                f"{stream['precision']}: {share_text(ratio)} in run {stream['run_id']} "
                f"({met(ratio >= fm.TARGET_SHARE)})."]
    else:
        said = [f"The stream's goals: {goal}, which has not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --devices gpu')}."]
    cpu, busy = {}, []
    for run_id, run in fm.RECORDS.runs_in(path).items():
        pair = {p: r for p in ("lesson", STREAM) if (r := fm.find(run, "cpu", p))}
        if len(pair) == 2:
            first = next(r["pipeline"] for r in run if r["pipeline"] in pair)
            ahead, lesson = fm.rate_summary(pair[STREAM]), fm.rate_summary(pair["lesson"])
            verdict = summaries.compare_middle(ahead, lesson, higher_is_better=True)
            busy.append(max(r.get("other_programs_cpu_share") or 0 for r in pair.values()))
            ok = not (verdict.measurable and verdict.ratio < 1)
            cpu[f"Run {run_id} (`{first}` first, others using {busy[-1]:.0%} of the CPU): "
                f"{verdict.sentence}, {met(ok)} ({fm.basis(ahead, lesson)})."] = ok
    if len(set(cpu.values())) > 1:  # no verdict of the goal: say why the runs may differ
        cpu[f"The runs{', on a shared machine,' * (min(busy) > BUSY)} disagree: no verdict."] = None
    said.append(f"On a CPU, the goal is `{STREAM}` no slower than `lesson`" + (
        ". " + " ".join(cpu) if cpu else ", which has not been recorded yet "
        + recorded_by(f"{RECORD_COMMAND} --devices cpu --pipelines lesson {STREAM}") + "."))
    return " ".join(said)


def chunks_text(path=fm.RECORDS.results_file) -> str:
    """The newest run's chunk shapes and chunk cache: each layout's rate read alone."""
    found = list(fm.RECORDS.runs_in(path, group=fm.GROUP).values())
    if not found:
        return ("The chunk shapes and the chunk cache have not been recorded yet "
                f"{recorded_by(f'{RECORD_COMMAND} --chunks', 'them')}.")
    rows = found[-1]
    head = ["file layout", "images/s read alone: median (range)"]
    return (f"On the {parts.machine(rows)} (run {rows[0]['run_id']}), the generator read alone, "
            f"a window of {rows[0]['window']} blocks:\n\n" + pagewords.markdown_table(head, [
                [r["layout"], _rate_cell(r)] for r in rows]))


def substitutions(path=fm.RECORDS.results_file) -> dict[str, str]:
    """The episode's values (``ref_feed_*``)."""
    path = Path(path)
    records = fm.RECORDS.reference_run(path)
    names = hardware(records)
    return {
        "ref_feed_when": (parts.provenance(records, file="results/feeding.jsonl") if records
                          else "No reference run has been recorded yet."),
        # The data every CNN number of the page was measured on, named where they are shown.
        "ref_feed_data": data_label(records) if records else LABELS[fm.RECORDS.data],
        "ref_feed_goal_gpu": (f"the reference run's GPU ({names['GPU']})" if "GPU" in names
                              else "a data-centre GPU (none is recorded in the reference run yet)"),
        "ref_feed_peaks": gpu_peaks_text(records),
        "ref_feed_gpu": names.get("GPU", NOT_RECORDED),
        "ref_feed_table": table(records),
        "ref_feed_findings": findings(records),
        "ref_feed_order": pagewords.reordered_note(
            [r for r in records if r.get("pipeline") in fm.HDF5_PIPELINES and r.get("mode") == "train"],
            "the batches of the `lesson` pipelines"),
        "ref_feed_reading": reading(records),
        "ref_feed_stream": stream_goals(records, path),
        "ref_feed_chunks": chunks_text(path),
        "ref_feed_fig_pipelines_alt": (pipelines_alt(records) if records else
                                       "A chart without data: no reference run has been recorded yet."),
    }


def _repeats_words(counts) -> str:
    counts = sorted(set(counts)) or ["no"]
    return str(counts[0]) if len(counts) == 1 else f"{counts[0]} to {counts[-1]}"


def pipeline_panels(records) -> tuple[list[str], list[str], dict]:
    """``(devices, pipelines, {(device, pipeline, mode): record})``: the alt text's and figure's."""
    devices = [d for d in COLOURS if any(r["device_kind"] == d for r in fm.RECORDS.visible(records))]
    bars = {(device, pipeline, mode): record for device in devices for pipeline in fm.PIPELINES
            for mode in MODES if (record := fm.find(records, device, pipeline, mode)) is not None}
    return devices, [p for p in fm.PIPELINES if any(key[1] == p for key in bars)], bars


def figures(records):
    """One panel per device, one row per pipeline: training solid, the loader alone hatched."""
    import numpy as np

    need(records, "run the benchmark first")
    devices, order, bars = pipeline_panels(records)
    need(devices, "every record delivered wrong data")
    fig, axes = panels(len(devices), (9 if len(devices) == 1 else 13, 6.4), across=True,
                       sharey=True)
    for ax, device in zip(axes, devices, strict=True):
        for offset, (mode, (label, style)) in zip((-0.2, 0.2), MODES.items(), strict=True):
            for i, record in enumerate(bars.get((device, p, mode)) for p in order):
                if record is None:
                    continue
                rate = fm.rate_summary(record)
                ax.barh(i + offset, rate["median"], height=0.38, color=COLOURS[device],
                        edgecolor="black", label=label, **style)
                summaries.draw_spread(ax, [i + offset], [rate], horizontal=True)
                label = None
                text = (f"{rate_text(rate['median'])}/s"
                        + (f" ({record['steps']} steps)" if record["partial_epoch"] else "")
                        + (" *" if _busy(record) else ""))
                ax.annotate(f"{mode} {text}", (rate["max"], i + offset), xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=7)
        ax.set_title(f"{device.upper()}: {parts.machine([r for r in records if r['device_kind'] == device])}",
                     fontsize=10)
        ax.set_xscale("log")
        ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)
        counts = [fm.rate_summary(r)["n"] for (d, _, _), r in bars.items() if d == device]
        ax.set_xlabel(f"images per second (log scale)\n{summaries.SPREAD_NOTE}\n"
                      f"timed epochs per bar: {_repeats_words(counts)}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
        ax.margins(x=0.35)
    axes[0].set_yticks(np.arange(len(order)),
                       [fm.PIPELINES[p].replace(", ", ",\n", 1) for p in order], fontsize=8)
    axes[0].invert_yaxis()
    base = records[0]  # the reference run's pipelines: one batch size and data set
    title(fig, f"Training the lesson's CNN from each input pipeline (batch {base['batch_size']},"
               f" {base['n_images']:,} images)", records, *parts.run_labels(records))
    fig.tight_layout()
    if any(_busy(r) for r in bars.values()):
        fig.text(0.01, 0.005, f"* other programs used more than {BUSY:.0%} of the machine's CPU "
                 "time during this measurement: it may be too slow (CPU) or noisy",
                 fontsize=8, style="italic", va="bottom")
    return (fig,)


def _busy(record) -> bool:
    return (record.get("other_programs_cpu_share") or 0) > BUSY


def pipelines_alt(records) -> str:
    """The alt text of the figure, from what :func:`figures` draws."""
    devices, order, bars = pipeline_panels(records)
    names = hardware(records)
    drawn = " and ".join(f"the {d.upper()} ({names.get(d.upper(), NOT_RECORDED)})" for d in devices)
    counts = {mode: [fm.rate_summary(r)["n"] for k, r in bars.items() if k[2] == mode] for mode in MODES}
    said = [f"Horizontal bars on a logarithmic axis of images per second, "
            f"{'one panel' if len(devices) == 1 else 'one panel each'} for {drawn}, one row "
            f"per input pipeline: {', '.join(order)}. Each row has a solid bar for training "
            "with model.fit and a paler hatched bar for the loader alone, each at the median of "
            f"its timed epochs ({_repeats_words(counts['train'])} for training, "
            f"{_repeats_words(counts['loader'])} for the loader alone), with whiskers from the "
            "slowest to the fastest epoch and a dot for each epoch, and labelled with its median."]
    for device in devices:
        train = {p: fm.rate_summary(bars[(device, p, "train")])["median"] for p in order
                 if (device, p, "train") in bars}
        if train:
            low, high = min(train, key=train.get), max(train, key=train.get)
            said.append(f"{device.upper()} training medians: from {rate_text(train[low])} "
                        f"images/s ({low}) to {rate_text(train[high])} images/s ({high}); "
                        f"fastest by the lesson's rule: {fm.fastest_text(records, device, str)}.")
    partial = sorted({r["steps"] for r in bars.values() if r["partial_epoch"]})
    if partial:
        said.append(f"Only the first {' or '.join(map(str, partial))} batches of each epoch "
                    "were timed where a bar says so.")
    return " ".join(said)
