"""The ladder on the page: episode 9's ``ref_ladder_*`` values, its figure and the command's
table, from the newest run with GPU records, the profile's GPU record and the card's published
peak; without GPU records they say NOT_RECORDED, and the page shows the command instead."""

import math
import statistics
from pathlib import Path

from gpulesson.experiments.ladder import LARGE_FACTOR, RECORDS, RUNGS, SPE, rungs_of
from gpulesson.experiments.profile import RECORDS as PROFILE
from gpulesson.experiments.profile.page import gpu_name
from gpulesson.machine import flops, gpu_peaks
from gpulesson.records.energy import energy_summary
from gpulesson.records.figkit import label_bars, need, panels
from gpulesson.records.pagewords import markdown_table, met
from gpulesson.records.recordset import split_epochs
from gpulesson.records.results import NOT_RECORDED, duration, hardware, software
from gpulesson.records.summaries import NO_DIFFERENCE, compare, overlap, summarise, summary_text

COMMAND = "KERAS_BACKEND=jax python -m gpulesson.experiments.ladder"
PART_FLAGS = {"keras": "", "limit": " --part limit", "nightly": " --part nightly --nightly .whl/nightly"}
reference_run = RECORDS.newest_run
RATIO_GOAL = 1.3  # the best released-Keras stream rung within 1.3x of the limit's epoch
RAM_GOAL = 0.9  # the stream at least 0.9x as fast as the same settings fed from RAM
STREAMS = ("stream", "read-ahead", "grain")  # feeds that read the HDF5 file while training
FIGURES, FIGURE_FOLDER = ("ladder.svg",), "fig/09-feeding-the-gpu"
COLOURS = {"keras": "#4c72b0", "nightly": "#dd8452", "limit": "#55a868"}
KINDS = {"keras": "Keras 3 (released)", "nightly": "keras-nightly (pre-release)",
         "limit": "plain JAX, one call an epoch"}


def starts(records, rung: str) -> list[dict]:
    return sorted((r for r in records if r.get("rung") == rung), key=lambda r: r["start"])


def summary(records, rung: str) -> dict | None:
    """The rung's timed epochs over all its starts (each start's first epoch apart)."""
    found = [split_epochs(r["epoch_seconds"]) for r in starts(records, rung)]
    return summarise([s for _, timed in found for s in timed],
                     [s for warm, _ in found for s in warm]) if found else None


def mean_of(records, rung: str, key: str, fmt: str | None = None):
    """The mean of ``key`` over the rung's starts; as text in ``fmt`` where given."""
    values = [r[key] for r in starts(records, rung) if r.get(key) is not None]
    mean = statistics.fmean(values) if values else None
    return mean if fmt is None else "not measured" if mean is None else format(mean, fmt)


def time_to(record: dict, accuracy: float) -> float | None:
    """Seconds from the start (compiling in, evaluations out) to the first epoch at ``accuracy``."""
    return next((clock for reached, clock in zip(record["test_accuracies"],
                                                 record["epoch_end_seconds"], strict=True)
                 if reached >= accuracy), None)


def target_accuracy(records) -> float | None:
    return next((r["test_accuracy"] for r in starts(records, "taught")), None)  # its first start's


def _stream_rungs(records) -> list[str]:
    return [n for n in RUNGS if RUNGS[n]["part"] == "keras" and RUNGS[n]["feed"] in STREAMS
            and starts(records, n)]


def best_stream(records) -> str | None:
    """The released-Keras stream rung with the shortest median epoch."""
    found = [(summary(records, n)["median"], n) for n in _stream_rungs(records)]
    return min(found)[1] if found else None


def limit_options(records) -> dict:
    """``limit+best``'s precision and batch: the best stream rung's, else bf16 at the large batch."""
    source = RUNGS[best_stream(records) or "limit+best"]
    return {"precision": source["precision"], "batch": source["batch"]}


def limit_for(records, rung: str) -> str | None:
    """The limit's rung recorded at ``rung``'s batch and precision (recorded, else planned)."""
    options = (starts(records, rung) or [RUNGS[rung]])[0]
    return next((name for name in ("limit", "limit+best") if (found := starts(records, name))
                 and all(found[0][k] == options[k] for k in ("batch", "precision"))), None)


def ram_twin(rung: str) -> str | None:
    """The rung that feeds ``rung``'s settings from arrays in RAM, if the ladder has one."""
    return next((n for n in RUNGS if RUNGS[n]["feed"] == "ram" and RUNGS[n]["part"] == "keras"
                 and all(RUNGS[n][k] == RUNGS[rung][k]
                         for k in ("precision", "steps_per_execution", "batch"))), None)


def ram_goals_text(records) -> str:
    """The fastest stream rung against ``fit(x, y)`` on arrays in RAM at batch 256 float32 and at
    the best stream rung's settings: RAM's median epoch over the stream's, and the goal."""
    said, best = [], best_stream(records)
    for twin in dict.fromkeys(filter(None, (ram_twin(n) for n in ("taught", best) if n))):
        same = [n for n in _stream_rungs(records) if ram_twin(n) == twin]
        if not same or not starts(records, twin):
            said.append(f"Against `{twin}`: not yet recorded (`{COMMAND} --rungs {twin}`).")
            continue
        rung = min(same, key=lambda n: summary(records, n)["median"])
        mine, ram = summary(records, rung), summary(records, twin)
        share = ram["median"] / mine["median"]
        ranges = "; their epochs' ranges overlap" if overlap(mine, ram) else ""
        said.append(f"The ladder's `{rung}` against `fit(x, y)` on arrays in RAM (`{twin}`): "
                    f"{share:.2f}x as fast{ranges} (goal {RAM_GOAL}x: {met(share >= RAM_GOAL)}).")
    return " ".join(said)


def _to_target(first: dict, target: float | None) -> str:
    reached = None if target is None else time_to(first, target)
    if reached is None:
        return NOT_RECORDED if target is None else f"not reached in {len(first['epoch_seconds'])} epochs"
    return duration(reached) + (" (cache not empty)" if first["start"] == 1
                                and first["cache"]["files_before"] else "")


def _joules(record: dict) -> str:
    if found := energy_summary(record):
        return f"{found['median']:.3g}"
    below = (record.get("energy") or {}).get("below_resolution")
    return "below the meter's resolution" if below else "not measured"


def table(records) -> str:
    head = ["Rung", "Epoch: median (range)", "TFLOP/s (whole epoch)", "x the limit", "Busy %",
            "Watts", "Joules an epoch (start 1)", "Test accuracy",
            "To the default's accuracy: start 1; start 2"]
    target, found = target_accuracy(records), []
    for name in (n for n in RUNGS if starts(records, n)):
        runs, limit = starts(records, name), limit_for(records, name)
        note = (" (pre-release)" if RUNGS[name]["part"] == "nightly" else
                " (a loop of steps: XLA:CPU)" if runs[0].get("limit_method") == "loop" else "")
        ratio = (f"{summary(records, name)['median'] / summary(records, limit)['median']:.2f}x"
                 if limit else "no limit at its batch and precision")
        found.append([
            f"`{name}`{note}", summary_text(summary(records, name), duration, what="epochs")
            + f", {len(runs)} starts", mean_of(records, name, "achieved_tflops", ".3g"), ratio,
            mean_of(records, name, "busy_percent", ".0f"), mean_of(records, name, "mean_watts", ".0f"),
            _joules(runs[0]), mean_of(records, name, "test_accuracy", ".3f"),
            "; ".join(_to_target(r, target) for r in runs)])
    return markdown_table(head, found)


def rungs_text(records=()) -> str:
    """What each rung removes, as a list, the combinations in one item; with records, the rungs
    their run lacks as not yet recorded, with the command that records them."""
    def item(names: list[str], text: str) -> str:  # and the command that adds them to the run
        lacking = " ".join(n for n in names if records and not starts(records, n))
        return f"- {text}" + (f" Not yet recorded: `{COMMAND}{PART_FLAGS[RUNGS[names[0]]['part']]} --rungs "
                              f"{lacking} --run-id {records[0]['run_id']}`." if lacking else "")

    said = [item([n], f"`{n}` removes {RUNGS[n]['removes']}.")
            for n in ("taught", "read-ahead", "ram", "device")]
    said.append(item([n for n in rungs_of("keras") if n.startswith(("device+", "read-ahead+"))],
                     f"`device+...` and `read-ahead+...` add every combination of `bf16`, `spe` "
                     f"({SPE} steps a call) and `batch` ({LARGE_FACTOR}× the batch)."))
    said.append(item(["grain", "grain+bf16+spe+batch", "ram+bf16+spe+batch"],
                     f"`grain` removes {RUNGS['grain']['removes']}; `grain+bf16+spe+batch` reads so at "
                     "those settings, and `ram+bf16+spe+batch` gives them to `fit(x, y)` as arrays."))
    scans = [n for n in RUNGS if RUNGS[n]["part"] == "nightly"]
    said.append(item(scans, " and ".join(f"`{n}`" for n in scans) + " remove "
                     + RUNGS[scans[0]]["removes"] + "."))
    said += [item([n], f"`{n}` removes {RUNGS[n]['removes']}.") for n in rungs_of("limit")]
    return "\n".join(said)


def computed_text(profile_path=PROFILE.results_file, n_images: int = 45_000) -> str:
    """The two rows computed, not measured: the profile's kernels alone over an epoch's steps,
    and the FLOP floor (an epoch's arithmetic at the card's published peak)."""
    gpu = PROFILE.find(PROFILE.reference_run(profile_path), device_kind="gpu")
    if not gpu or "failed" in gpu["profile"]:  # no profile, or its trace was not read
        return NOT_RECORDED
    kernels, steps = gpu["profile"]["device"]["kernels"], math.ceil(n_images / gpu["batch_size"])
    peaks, key = gpu_peaks.peaks_for(gpu_name(gpu)), gpu_peaks.float32_key(gpu)
    said = [f"Computed, not measured, from the profile (run {gpu['run_id']}, batch "
            f"{gpu['batch_size']}): the kernels alone would take {duration(kernels * steps)} an "
            f"epoch ({duration(kernels)} a step, {steps} steps)."]
    if peaks:
        floor = {p: flops.training_flops_per_image() * n_images / (peaks[p] * 1e12) for p in (key, "bf16")}
        said.append(f"The FLOP floor, an epoch's arithmetic at the published peak, is "
                    f"{duration(floor[key])} in {key.upper()} and {duration(floor['bf16'])} in BF16.")
    return " ".join(said)


def goals_text(records) -> str:
    """The best stream rung's goals: its epoch within :data:`RATIO_GOAL` of the limit at its
    batch and precision, and the default's accuracy sooner than the default (first starts, empty cache)."""
    best, target = best_stream(records), target_accuracy(records)
    if best is None or target is None:
        return (f"Its goals, not yet recorded: the best rung of released Keras from the HDF5 "
                f"stream within {RATIO_GOAL}x of the plain-JAX limit at its batch and "
                "precision, and the default's test accuracy sooner than the default, compiling "
                f"included (`{COMMAND}`).")
    if limit := limit_for(records, best):
        ratio = summary(records, best)["median"] / summary(records, limit)["median"]
        said = f"{ratio:.2f}x: {met(ratio <= RATIO_GOAL)}"
    else:
        said = f"not yet recorded (no limit at its batch and precision: `{COMMAND} --part limit`)"
    found = [time_to(r, target) for n in (best, "taught") for r in starts(records, n)
             if r["start"] == 1 and not r["cache"]["files_before"]]  # compiling included
    race = (" against ".join(duration(t) if t is not None else "not reached in its epochs"
                             for t in found) + f": {met(None not in found and found[0] < found[1])}"
            if len(found) == 2 else f"not yet recorded (`{COMMAND}`)")
    return (f"The best rung of released Keras from the HDF5 stream, `{best}`, within "
            f"{RATIO_GOAL}x of the plain-JAX limit at its batch and precision: {said}. "
            f"The default's test accuracy ({target:.3f}) sooner than the default, compiling "
            f"included: {race}. " + ram_goals_text(records))


def cache_text(records) -> str:
    """What the persistent compilation cache did to the default's first epoch, and which first
    starts began with an empty cache."""
    runs, firsts = starts(records, "taught"), [r for r in records if r["start"] == 1]
    empty = [f"`{r['rung']}`" for r in firsts if not r["cache"]["files_before"]]
    said = [f"The default's first epoch took {duration(runs[0]['epoch_seconds'][0])} compiling into "
            f"an empty cache, {duration(runs[1]['epoch_seconds'][0])} reading it."] if len(runs) > 1 else []
    said += [f"In this run a part's rungs shared one cache, empty only for {', '.join(empty)}." if
             len(empty) < len(firsts) else "Each rung's first start began with an empty cache of its own."]
    return " ".join(said) if firsts else NOT_RECORDED


def bf16_text(records) -> str:
    """Each rung with bf16 against the same rung without it, in :func:`compare`'s words."""
    found = {n: summary(records, n) for n in RUNGS if starts(records, n)}
    said = {(a, b): compare(found[a], found[b]) for a in found
            if (b := a.replace("+bf16", "")) != a and b in found}
    apart = [f"`{a}` ({c.text} `{b}`: {duration(found[a]['median'])} against "
             f"{duration(found[b]['median'])})" for (a, b), c in said.items() if c.measurable]
    same = len(said) - len(apart)
    return NOT_RECORDED if not said else f"Measurably apart: {', '.join(apart) or 'none'}." + (
        f" {NO_DIFFERENCE.capitalize()} in the other pairs ({same})." if same else "")


def best_gpu_text(records) -> str:
    """Episode 5's sentence on the GPU's best rung beside its default."""
    if not (best := best_stream(records)):
        return NOT_RECORDED
    mine, default = (summary(records, n)["median"] for n in (best, "taught"))
    return (f"the ladder's best rung from the HDF5 stream, `{best}`, trains an epoch in "
            f"{duration(mine)} against the default's {duration(default)} on the "
            f"{hardware(records)['GPU']} (episode 9, run {records[0]['run_id']})")


def describe(records) -> str:
    return "\n".join([f"The ladder, run {records[0]['run_id']} ({software(records)}):",
                      table(records), goals_text(records)])


def _drawn(records):
    """``(rung, TFLOP/s)`` of each rung recorded, the whole epoch's rate."""
    return [(n, mean_of(records, n, "achieved_tflops")) for n in RUNGS if starts(records, n)]


def _machine(records) -> str:
    return "; ".join(f"{k}: {v}" for k, v in hardware(records).items())


def alt_text(records) -> str:
    drawn = _drawn(records)
    if not drawn:
        return "No rung of the ladder is recorded yet."
    said = ", ".join(f"{name} {tflops:.3g}" for name, tflops in drawn)
    return (f"Horizontal bars of the TFLOP/s each rung of the ladder reached over a whole epoch "
            f"on {_machine(records)}, from the lesson's default at the top to the plain-JAX "
            f"limit at the bottom, each bar labelled with its value: {said}.")


def figures(records):
    """A bar per rung, coloured by what trains it (released Keras, the pre-release, plain JAX)."""
    from matplotlib.patches import Patch

    drawn = _drawn(records)
    need(drawn, "run python -m gpulesson.experiments.ladder")
    fig, (ax,) = panels(1, (8, 1.4 + 0.3 * len(drawn)))
    positions = list(range(len(drawn)))[::-1]
    rates = [tflops for _, tflops in drawn]
    kinds = [RUNGS[name]["part"] for name, _ in drawn]
    ax.barh(positions, rates, height=0.7, color=[COLOURS[k] for k in kinds])
    label_bars(ax, positions, rates)
    ax.set_yticks(positions, [name for name, _ in drawn], fontsize=8)
    ax.set_xlim(0, max(rates) * 1.15)
    ax.set_xlabel("TFLOP/s over a whole epoch (higher is better)")
    parts = dict.fromkeys(kinds)
    fig.legend(handles=[Patch(color=COLOURS[p], label=KINDS[p]) for p in parts], fontsize=7.5,
               loc="lower center", ncol=len(parts), frameon=False)
    fig.suptitle(f"The lesson's CNN, one rung after another. {_machine(records)}", fontsize=8.5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))  # the legend below the axis, clear of the bars
    return (fig,)


def substitutions(path=RECORDS.results_file) -> dict[str, str]:
    """Episode 9's ``ref_ladder_*`` values (and episode 5's ``ref_ladder_best_gpu``)."""
    gpu = [r for r in reference_run(path) if r["device_kind"] == "gpu"]
    return {
        "ref_ladder_gpu": hardware(gpu)["GPU"] if gpu else NOT_RECORDED,
        "ref_ladder_when": f"run {gpu[0]['run_id']}, {software(gpu)}" if gpu else NOT_RECORDED,
        "ref_ladder_table": table(gpu) if gpu else NOT_RECORDED,
        "ref_ladder_goals": goals_text(gpu),
        "ref_ladder_cache": cache_text(gpu) if gpu else NOT_RECORDED,
        "ref_ladder_alt": alt_text(gpu),
        "ref_ladder_rungs": rungs_text(gpu),
        "ref_ladder_bf16": bf16_text(gpu),
        "ref_ladder_computed": computed_text(Path(path).with_name(PROFILE.results_file.name)),
        "ref_ladder_best_gpu": best_gpu_text(gpu),
    }
