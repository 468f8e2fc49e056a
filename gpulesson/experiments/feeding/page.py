"""Values for the page: the episode's ``ref_feed_*`` placeholders and the notebook's table.

Where the reference run lacks something (no GPU records yet, a pipeline that delivered wrong
data), the page says so once, in a whole sentence, instead of a cell or a number reading "not
recorded yet": :func:`substitutions` gives sentences and a whole Markdown table, built from
what the run has.
"""

from __future__ import annotations

from gpulesson.experiments.feeding.records import (
    PIPELINES,
    RESULTS_FILE,
    TARGET_EPOCH_SECONDS,
    TARGET_SHARE,
    best_hdf5,
    best_pipeline,
    delivered_wrong_data,
    find,
    reference_run,
    shown,
    targets,
)
from gpulesson.results import NOT_RECORDED, data_label, hardware
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
BACKENDS = {"jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow"}
# A loader that alone delivers less than this many times the images per second of training
# from it leaves the model waiting: the margin absorbs the epochs' spread and the loader's
# share of the CPU while training runs. The episode states the same rule (tested).
LOADER_MARGIN = 1.5
NO_GPU_RUN = ("The GPU part of the reference run has not been recorded yet; on a GPU node, "
              f"`{RECORD_COMMAND}` records it (the instructor note gives the whole command).")


# --- numbers as text ------------------------------------------------------------------------------

def rate_text(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def ratio_text(value: float) -> str:
    """A ratio with the digits it deserves: 1.86 -> '1.9', 48.2 -> '48'."""
    return f"{value:.2g}" if value < 10 else f"{value:.0f}"


def software(records) -> str:
    first = records[0]
    backend = first["backend"]
    return f"Keras {first['versions'].get('keras', '?')}, {backend} " \
           f"{first['versions'].get(backend, '?')}"


def setting_text(record) -> str:
    if record["mode"] == "loader":
        return "loader only"
    parts = [record["precision"], "jit" if record["jit_compile"] else "no jit"]
    if record["steps_per_execution"] != 1:
        parts.append(f"{record['steps_per_execution']} steps/execution")
    return ", ".join(parts)


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
    backends = " and ".join(sorted({BACKENDS.get(r["backend"], r["backend"])
                                    for r in records if delivered_wrong_data(r)}))
    names = " and ".join(f"`{name}`" for name in left_out)
    return (f"The run also timed {names} with Keras worker processes on {backends}, where they "
            "delivered batches of earlier epochs: those rates are kept in the results file "
            "but not shown.")


# --- the notebook's table -----------------------------------------------------------------------

def describe(records) -> str:
    """A table of one run: images/s and epoch time (median, range) per record."""
    if not records:
        return "No run recorded."
    lines = [f"Run {records[0]['run_id']}: {software(records)}; {data_label(records)}; "
             + "; ".join(f"{k}: {v}" for k, v in hardware(records).items())]
    lines.append(f"{'device':6} {'pipeline':20} {'mode':6} {'setting':32} {'batch':>5} "
                 f"{'images/s':>10} {'epoch s (min-max)':>24}")
    for r in records:
        part = f" [{r['steps']}/{r['full_epoch_steps']} steps]" if r["partial_epoch"] else ""
        wrong = " WRONG DATA" if delivered_wrong_data(r) else ""
        lines.append(
            f"{r['device_kind']:6} {r['pipeline']:20} {r['mode']:6} {setting_text(r):32} "
            f"{r['batch_size']:>5} {rate_text(r['images_per_second']):>10} "
            f"{r['median_epoch_seconds']:>8.3f} ({r['min_epoch_seconds']:.3f}-"
            f"{r['max_epoch_seconds']:.3f}){part}{wrong}")
    if any(delivered_wrong_data(r) for r in records):
        lines.append("WRONG DATA: Keras worker processes on this backend delivered batches of "
                     "earlier epochs; the rate is not valid.")
    checks = targets(records)
    if checks:
        lines.append(targets_text(checks))
    return "\n".join(lines)


# --- the page's values --------------------------------------------------------------------------

def _cell(records, device, pipeline) -> str:
    train = find(records, device, pipeline)
    if train is None:
        return "not measured"
    loader = find(records, device, pipeline, "loader")
    return rate_text(train["images_per_second"]) + (
        f" ({rate_text(loader['images_per_second'])})" if loader else "")


def table(records) -> str:
    """The reference run as a Markdown table: a column per device it has, a row per pipeline
    with shown records (training images/s, the loader alone in brackets), epoch times and
    the fastest pipeline; then a sentence on what is missing or left out."""
    if not records:
        return (f"No reference run has been recorded yet: `{RECORD_COMMAND}` records one "
                "(the instructor note gives the whole command).")
    names = hardware(records)
    devices = [d for d in DEVICES if any(r.get("device_kind") == d for r in shown(records))]
    lines = ["| pipeline | " + " | ".join(f"{d.upper()}: {names[d.upper()]}" for d in devices)
             + " |", "|---" * (len(devices) + 1) + "|"]
    for pipeline in PIPELINES:
        if any(find(records, d, pipeline) for d in devices):
            lines.append(f"| {ROWS[pipeline]} | "
                         + " | ".join(_cell(records, d, pipeline) for d in devices) + " |")
    for pipeline, what in (("classic", "classic"), ("lesson", "lesson (uncompressed)"),
                           ("device", "on the device")):
        cells = [find(records, d, pipeline) for d in devices]
        if any(cells):
            lines.append(f"| one epoch, {what} | " + " | ".join(
                seconds_text(c["full_epoch_seconds"]) if c else "not measured" for c in cells)
                + " |")
    lines.append("| fastest pipeline | " + " | ".join(
        best_pipeline(records, d) or "not measured" for d in devices) + " |")
    note = wrong_data_sentence(records)
    return "\n".join(lines) + (f"\n\n{note}" if note else "")


def _slowdown(records, device) -> str | None:
    lesson, classic = best_hdf5(records, device), find(records, device, "classic")
    if not (lesson and classic):
        return None
    return (f"the classic pipeline trained "
            f"{ratio_text(lesson['images_per_second'] / classic['images_per_second'])} times "
            f"slower than the lesson's fastest HDF5 pipeline (`{lesson['pipeline']}`)")


def _settings_sentence(records) -> str:
    device = "gpu" if any(r.get("device_kind") == "gpu" and r.get("group") not in
                          (None, "pipelines") for r in shown(records)) else "cpu"
    swept = [r for r in shown(records) if r.get("device_kind") == device
             and r.get("group") in ("precision", "jit", "batch")]
    if not swept:
        return ""
    base = find(records, device, swept[0]["pipeline"])
    parts = [f"{r['precision'].replace('_', ' ')} {rate_text(r['images_per_second'])}"
             for r in swept if r["group"] == "precision"]
    if parts:
        parts[0] += " images/s"
    parts += [f"XLA off {rate_text(r['images_per_second'])}" for r in swept
              if r["group"] == "jit" and r["jit_compile"] is False]
    batch = [r for r in swept if r["group"] == "batch"] + ([base] if base else [])
    fastest = max(batch, key=lambda r: r["images_per_second"])
    start = (f"On the {device.upper()}'s fastest pipeline (`{swept[0]['pipeline']}`"
             + (f", {rate_text(base['images_per_second'])} images/s in float32" if base
                else "") + "), with one setting changed at a time: ")
    return (start + ", ".join(parts) + f"; the fastest batch size was {fastest['batch_size']:,}. "
            "The second figure shows all settings, including `steps_per_execution`.")


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
        sentences.append(
            f"On the GPU, the lesson's fastest HDF5 pipeline (`{checks['pipeline']}`) reached "
            f"**{checks['share']:.0%}** of the rate of device-resident data, and one epoch of "
            f"{checks['n_images']:,} images took **{seconds_text(checks['epoch_seconds'])}** "
            f"(on the device: {seconds_text(device['full_epoch_seconds'])}). The lesson's goals "
            f"are at least {TARGET_SHARE:.0%} and at most {TARGET_EPOCH_SECONDS:g} second; "
            f"the check: {targets_text(checks)}.")
        gpu = _slowdown(records, "gpu")
        if gpu:
            sentences.append(f"On the GPU, {gpu}.")
        lesson_gpu, lesson_cpu = find(records, "gpu", "lesson"), find(records, "cpu", "lesson")
        if lesson_gpu and lesson_cpu:
            sentences.append(
                "The GPU trained from the lesson's pipeline "
                f"{ratio_text(lesson_gpu['images_per_second'] / lesson_cpu['images_per_second'])}"
                " times faster than the CPU.")
    elif not any(r.get("device_kind") == "gpu" for r in shown(records)):
        sentences.append("Whether the GPU waits for any of these pipelines, and the lesson's "
                         f"goals (at least {TARGET_SHARE:.0%} of the rate of device-resident "
                         f"data, at most {TARGET_EPOCH_SECONDS:g} second an epoch), can only be "
                         "read from a GPU run. " + NO_GPU_RUN)
    settings = _settings_sentence(records)
    return " ".join(sentences) + ("\n\n" + settings if settings else "")


def reading(records) -> str:
    """The answer to the episode's exercise on reading the benchmark, from the records."""
    parts = []
    for device in DEVICES:
        rows = [(find(records, device, p), find(records, device, p, "loader"))
                for p in PIPELINES]
        rows = [(t, ld) for t, ld in rows if t and ld]
        if not rows:
            continue
        waiting = [t["pipeline"] for t, ld in rows
                   if ld["images_per_second"] < LOADER_MARGIN * t["images_per_second"]]
        best = best_pipeline(records, device)
        text = (f"on the {device.upper()}, the fastest pipeline was `{best}`; ")
        if waiting:
            text += ("training came close to the loader's own rate for "
                     + ", ".join(f"`{p}`" for p in waiting)
                     + f" (the loader alone delivered less than {LOADER_MARGIN:g} times the "
                     "images per second of training): those pipelines made the model wait")
        else:
            text += (f"every loader alone delivered at least {LOADER_MARGIN:g} times the images "
                     "per second of training from it: the model, not the data, set the pace")
        parts.append(text)
    if not parts:
        return "No reference run has been recorded yet."
    answer = "In the reference run, " + "; ".join(parts) + "."
    if not any(r.get("device_kind") == "gpu" for r in shown(records)):
        answer += " There is no GPU run to compare with yet."
    return answer


def substitutions(path=RESULTS_FILE) -> dict[str, str]:
    """The episode's values (``ref_feed_*``) from the reference run: its date, software and
    hardware, the table, the findings and the answer to the reading exercise; each says in
    words what the run lacks."""
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
        "ref_feed_findings": findings(records) or table(records),
        "ref_feed_reading": reading(records),
        "ref_feed_workers": wrong_data_sentence(records)
        or "No record of the reference run was measured with a pipeline that delivered wrong data.",
    }

