"""The matrix-multiplication benchmark of episode 6: timing, records, crossover, page numbers,
figures and the command line."""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest
from conftest import ROOT, load_script
from gpulesson.experiments.matmul.__main__ import main as matmul_main

from gpulesson.experiments import matmul
from gpulesson.experiments.matmul import measure as mm
from gpulesson.experiments.matmul import page as mp
from gpulesson.experiments.matmul.page import gflops_alt, sync_alt
from gpulesson.experiments.registry import figure_drawer
from gpulesson.records import summaries
from gpulesson.records.results import (
    NOT_RECORDED,
    append_record,
    duration,
    is_gpu,
    read_records,
    validate_record,
)

FIG = ROOT / "fig" / "06-why-gpus-are-fast"


# --- arithmetic and checks ----------------------------------------------------------------------

def test_gflops_is_two_n_cubed_over_time():
    assert mm.gflops(1000, 2.0) == pytest.approx(1.0)  # 2e9 operations in 2 s
    assert mm.gflops(16, 8192e-9) == pytest.approx(1.0)  # 2 * 16^3 = 8192
    assert mm.gflops(4096, 1.0) == pytest.approx(2 * 4096**3 / 1e9)
    with pytest.raises(ValueError, match="positive"):
        mm.gflops(16, 0.0)


@pytest.mark.parametrize("call, message", [
    (lambda: mm.check_device("tpu"), "unknown device 'tpu'.*cpu, gpu"),
    (lambda: mm.check_dtype("float64"), "unknown dtype 'float64'"),
    (lambda: mm.check_sizes([16, 0]), "at least 1, not 0"),
    (lambda: mm.check_sizes([-4]), "at least 1"),
    (lambda: mm.check_sizes([2.5]), "whole number"),
    (lambda: mm.check_sizes([]), "no matrix sizes"),
    (lambda: mm.gflops(0, 1.0), "at least 1"),
    (lambda: matmul.sweep("tpu", sizes=[4]), "unknown device"),
    (lambda: matmul.sweep("cpu", sizes=[0]), "at least 1"),
    (lambda: matmul.time_matmul(4, repeats=0), "at least 1"),
])
@pytest.mark.bad_input("bad argument")
def test_bad_input_gives_a_clear_error(call, message):
    with pytest.raises(ValueError, match=message):
        call()


# --- measuring ---------------------------------------------------------------------------------

def test_a_tiny_sweep_gives_well_formed_records(tmp_path):
    result = matmul.sweep("cpu", "float32", [8, 4], repeats=2)
    assert result["sizes"] == [4, 8] and [p["n"] for p in result["points"]] == [4, 8]
    assert result["method"] == mm.METHOD and result["max_overhead_share"] == 0.05
    for point in result["points"]:
        assert len(point["seconds"]) == 2 and all(s > 0 for s in point["seconds"])
        # latency: synchronised calls, kept as such; throughput: windows of calls, one wait each
        assert len(point["latency_seconds"]) == 2 and point["latency"]["n"] == 2
        assert point["latency"]["samples"] == point["latency_seconds"]
        calls = point["calls_per_sync"]
        assert calls >= 1 and len(point["window_seconds"]) == 2
        assert point["seconds"] == pytest.approx([w / calls for w in point["window_seconds"]])
        assert point["overhead_share"] == pytest.approx(
            point["sync_overhead_seconds"] / np.median(point["window_seconds"]))
        assert point["probe_calls"] >= 2 and point["probe_seconds"] > 0
        # the rule: a recorded warm-up, every timed sample kept, and their summary
        assert len(point["warmup_seconds"]) == summaries.WARMUP
        assert point["first_call_seconds"] == point["warmup_seconds"][0]
        summary = point["summary"]
        assert summary["samples"] == point["seconds"] and summary["n"] == 2
        assert summary["warmup"] == point["warmup_seconds"]
        assert summary["median"] == point["median_seconds"]
        assert len(point["unsynchronised_seconds"]) == 2
        assert point["min_seconds"] <= point["median_seconds"] <= point["max_seconds"]
        assert point["gflops"] == pytest.approx(2 * point["n"] ** 3 / point["median_seconds"] / 1e9)
        assert point["gflops_low"] <= point["gflops"] <= point["gflops_high"]
        assert point["first_call_seconds"] > 0
        assert point["unsynchronised_median_seconds"] > 0  # float32: the mistake is timed too
        assert point["transfer_median_seconds"] is None  # nothing to copy on the CPU
    for moment in ("start", "end"):  # the load average before and after the sweep
        load = result["load_average"][moment]
        assert load is None or (len(load) == 3 and all(v >= 0 for v in load))
    record = matmul.sweep_record(result, run_id="r1", source="test", repeats=2)
    assert record["warmup"] == summaries.WARMUP and record["repeats"] == 2
    validate_record(record)
    assert record["experiment"] == "matmul" and record["device"] == "CPU"
    assert record["data"] == "random" and record["versions"]["keras"]
    path = append_record(tmp_path / "m.jsonl", record)
    assert read_records(path) == [json.loads(json.dumps(record))]

    reduced = matmul.sweep("cpu", "bfloat16", [4], repeats=1)
    assert reduced["unsupported"] is None and reduced["points"][0]["gflops"] > 0
    assert reduced["points"][0]["unsynchronised_median_seconds"] is None


def test_the_copy_to_the_device_can_be_timed():
    point = matmul.time_matmul(8, "cpu", "float32", repeats=2, transfer=True)
    assert point["transfer_median_seconds"] > 0 and len(point["transfer_seconds"]) == 2


def test_the_measurement_follows_the_lessons_rule():
    import inspect

    from gpulesson.experiments.matmul import measure

    assert matmul.REPEATS == summaries.REPEATS and matmul.QUICK_REPEATS == summaries.QUICK_REPEATS
    for function in (measure.time_matmul, measure.sweep):
        defaults = inspect.signature(function).parameters
        assert defaults["repeats"].default == summaries.REPEATS
        assert defaults["warmup"].default == summaries.WARMUP
    # the command: the rule's repeats, fewer in quick mode
    assert "repeats_for(args.quick)" in inspect.getsource(measure.measure)


class LazyValue:
    """What a GPU framework returns at once: the number exists only once the work is done."""

    def __init__(self, delay):
        self.delay = delay

    def __array__(self, dtype=None, copy=None):
        time.sleep(self.delay)  # fetching it waits for the work
        return np.zeros((1, 1), dtype="float32")


class LazyResult:
    def __init__(self, delay):
        self.shape, self.delay = (4, 4), delay

    def __getitem__(self, index):
        return LazyValue(self.delay)


def test_the_timed_call_waits_for_a_lazy_result():
    delay = 0.05
    point = matmul.time_matmul(4, repeats=2, unsynchronised=True,
                               op=lambda a, b: LazyResult(delay))
    assert point["latency"]["min"] >= delay  # waited for every result
    assert min(point["window_seconds"]) >= delay  # every window waited for its last result
    assert point["unsynchronised_median_seconds"] < delay  # the mistake: the clock stopped early


def test_slow_sizes_are_skipped_and_unsupported_precisions_reported():
    result = matmul.sweep("cpu", "float32", [4, 8, 16], repeats=1, max_seconds=1e-12)
    assert [p["n"] for p in result["points"]] == [4]
    assert [s["n"] for s in result["skipped"]] == [8, 16] and "limit" in result["skipped"][0]["reason"]

    def refuse(a, b):
        raise TypeError("no float16 matmul on this device")

    result = matmul.sweep("cpu", "float16", [4, 8], repeats=1, op=refuse)
    assert result["points"] == [] and "TypeError: no float16" in result["unsupported"]


# --- crossover, reference run and page numbers ---------------------------------------------------

def made_up(kind, rates, dtype="float32", run_id="r", transfer=None, method=mm.METHOD,
            round_trip=0.0005, **fields):
    """A hand-made sweep record: rates {n: GFLOP/s}, of the current ``method`` (latency: the
    time per call plus ``round_trip``) or of the older one (``method=None``: the rates are those
    of synchronised calls). For tests only, never committed."""
    device, points = kind, []
    for n, rate in rates.items():
        seconds = 2 * n**3 / (rate * 1e9)
        latency = [(seconds + round_trip) * f for f in (0.95, 1.0, 1.05)]
        extra = ({"latency_seconds": latency, "latency": summaries.summarise(latency, [1.0]),
                  "calls_per_sync": 10, "window_seconds": [seconds * 10 * f
                                                          for f in (0.95, 1.0, 1.05)],
                  "sync_overhead_seconds": round_trip, "overhead_share": 0.02}
                 if method else {})
        # three timed calls 5 % apart: ranges of rates more than about 10 % apart do not overlap
        points.append({**extra, "n": n, "seconds": [seconds * 0.95, seconds, seconds * 1.05],
                       "median_seconds": seconds,
                       "min_seconds": seconds * 0.95, "max_seconds": seconds * 1.05,
                       "gflops": rate, "gflops_low": rate / 1.05, "gflops_high": rate / 0.95,
                       "first_call_seconds": seconds + 0.5,
                       "unsynchronised_median_seconds": seconds / 50 if dtype == "float32" else None,
                       **({"unsynchronised_seconds": [seconds / 50 * f for f in (0.95, 1.0, 1.05)]}
                          if dtype == "float32" else {}),
                       "transfer_median_seconds": transfer,
                       **({"transfer_seconds": [transfer] * 3} if transfer else {})})
    return {"experiment": "matmul", "run_id": run_id, "device_kind": device, "dtype": dtype,
            "keras_device": f"{device}:0", "device": "CPU" if device == "cpu" else "Made-up GPU",
            "backend": "jax", "date": "2026-01-01T00:00:00+00:00", "cpu_model": "Test CPU",
            "cores_usable": 2, "versions": {"keras": "3", "jax": "0"}, "data": "random",
            "data_label": "random numbers (timing only)", "sizes": list(rates), "points": points,
            "skipped": [], "unsupported": None, "wall_seconds": 1.5,
            **({"method": method} if method else {}), **fields}


SIZES = (16, 64, 256, 1024)


def at_sizes(*rates) -> dict:
    """``{n: GFLOP/s}`` of one rate for each of :data:`SIZES`."""
    return dict(zip(SIZES, rates, strict=True))


@pytest.mark.parametrize("cpu, gpu, expected", [
    ((10, 20, 30, 40), (50, 100, 500, 900), 16),  # the GPU is always faster
    ((10, 20, 30, 40), (1, 2, 3, 4), None),  # never faster
    ((10, 20, 30, 40), (1, 5, 300, 900), 256),  # crossing
    ((10, 20, 30, 40), (11, 5, 300, 900), 256),  # faster at 16 by chance, then slower
    ((10, 20, 30, 40), (1, 50, 300, 30), None),  # slower again at the largest size
    ((10, 20, 30, 40), (1, 20, 300, 900), 256),  # a tie is not faster
    ((10, 20, 30, 40), (1, 5, 31, 900), 1024),  # 31 against 30: the ranges overlap
    ((10, 20, 30, 40), (1, 5, 300, 42), None),  # higher median at the largest, ranges overlap
])
def test_crossover(cpu, gpu, expected):
    records = [made_up("cpu", at_sizes(*cpu)), made_up("gpu", at_sizes(*gpu))]
    assert matmul.crossover(records) == expected


def test_crossover_needs_both_devices_of_one_run():
    cpu = made_up("cpu", {16: 1.0})
    with pytest.raises(ValueError, match="no GPU sweep"):
        matmul.crossover([cpu])
    with pytest.raises(ValueError, match="several runs"):
        matmul.crossover([cpu, made_up("gpu", {16: 2.0}, run_id="other")])
    # sizes measured on one device only do not count
    gpu = made_up("gpu", {16: 2.0, 32: 5.0})
    assert matmul.crossover([made_up("cpu", {16: 1.0, 64: 9.0}), gpu]) == 16


def test_crossover_in_words():
    cpu = made_up("cpu", at_sizes(10, 20, 30, 40))
    assert mm.crossover_text([cpu]) == NOT_RECORDED
    crossing = [cpu, made_up("gpu", at_sizes(1, 5, 300, 900))]
    assert mm.crossover_text(crossing) == "n = 256"
    never = [cpu, made_up("gpu", at_sizes(1, 2, 3, 4))]
    assert "none" in mm.crossover_text(never) and "1,024" in mm.crossover_text(never)
    always = [cpu, made_up("gpu", at_sizes(50, 100, 500, 900))]
    assert "every size" in mm.crossover_text(always)


def write(path, records):
    for record in records:
        append_record(path, record)
    return path


def test_substitutions_say_plainly_what_is_missing(tmp_path):
    values = mp.substitutions(tmp_path / "none.jsonl")
    assert values and set(values.values()) == {NOT_RECORDED}
    assert all(key.startswith("ref_mm_") for key in values)

    cpu_only = write(tmp_path / "cpu.jsonl", [made_up("cpu", at_sizes(10, 20, 30, 40))])
    values = mp.substitutions(cpu_only)
    # medians with their ranges (summaries.summary_text); 3 timed calls each; TFLOP/s as drawn
    rate = 0.04 / 1.05, 0.04 / 0.95
    assert values["ref_mm_cpu_float32"] == (f"0.04 TFLOP/s (range {rate[0]:.3g}–{rate[1]:.3g} "
                                            "TFLOP/s, 3 repeats) at n = 1,024")
    assert values["ref_mm_cpu_smallest"].startswith("0.01 TFLOP/s (range ")
    assert "3 repeats" in values["ref_mm_cpu_largest_time"]
    assert values["ref_mm_cpu_largest_n"] == "1,024" and values["ref_mm_cpu"] == "Test CPU, 2 cores"
    assert values["ref_mm_lat_cpu_unsync_verdict"].startswith(  # 50 times too fast
        "2 TFLOP/s: more than any call that waited")
    assert values["ref_mm_cpu_sweep_time"] == "1.5 s"
    for key in ("ref_mm_gpu", "ref_mm_crossover", "ref_mm_gpu_float32", "ref_mm_gpu_bfloat16",
                "ref_mm_gpu_transfer_time", "ref_mm_gpu_smallest", "ref_mm_cpu_bfloat16"):
        assert values[key] == NOT_RECORDED, key

    both = write(tmp_path / "both.jsonl", [
        made_up("cpu", at_sizes(10, 20, 30, 40), run_id="a"),
        made_up("cpu", at_sizes(10, 20, 30, 40), run_id="b"),
        made_up("gpu", at_sizes(1, 5, 300, 900), run_id="b", transfer=0.01),
        made_up("cpu", at_sizes(10, 20, 30, 40), run_id="c"),  # newest, but no GPU
    ])
    assert {r["run_id"] for r in matmul.reference_run(both)} == {"b"}
    values = mp.substitutions(both)
    assert values["ref_mm_run"] == "b" and values["ref_mm_gpu"] == "Made-up GPU"
    assert values["ref_mm_crossover"] == "n = 256"
    assert values["ref_mm_gpu_transfer_time"] == "10 ms (range 10 ms–10 ms, 3 repeats)"
    gpu_seconds = 2 * 1024**3 / 900e9
    assert values["ref_mm_gpu_transfer_gflops"] == f"{2 * 1024**3 / (gpu_seconds + 0.01) / 1e12:.3g} TFLOP/s"


def test_the_figures_handle_a_run_with_a_gpu(tmp_path):
    records = [made_up("cpu", at_sizes(10, 20, 30, 40)),
               made_up("cpu", at_sizes(8, 15, 25, 35), dtype="bfloat16"),
               made_up("gpu", at_sizes(1, 5, 300, 900), transfer=0.01),
               made_up("gpu", at_sizes(1, 6, 900, 3000), dtype="bfloat16"),
               {**made_up("gpu", {}, dtype="float16"), "unsupported": "TypeError: no"}]
    gflops_fig, sync_fig = matmul.figures(records)
    ax = gflops_fig.axes[0]
    labels = ax.get_legend_handles_labels()[1]
    assert {"CPU float32", "CPU bfloat16", "GPU float32", "GPU bfloat16"} <= set(labels)
    assert "GPU float32, with copying the inputs to it" in labels
    assert any("GPU faster\nfrom n = 256" == t.get_text() for t in ax.texts)
    assert "Made-up GPU" in gflops_fig._suptitle.get_text()
    assert "random numbers" in gflops_fig._suptitle.get_text()
    sync_labels = sync_fig.axes[0].get_legend_handles_labels()[1]
    assert "GPU float32: one call, not waiting (wrong)" in sync_labels
    assert "GPU float32: one call, waiting for its result (latency)" in sync_labels
    assert "GPU float32: per call, many calls and one wait (throughput)" in sync_labels
    # and the figures step draws such a file
    drawn = figure_drawer(matmul.__name__, tmp_path)(write(tmp_path / "gpu.jsonl", records[:3]))
    assert [p.name for p in drawn] == ["matmul-gflops.svg", "matmul-sync.svg"]
    assert all(p.stat().st_size > 1000 for p in drawn)


def test_a_point_without_its_summary_is_summarised_from_its_calls():
    old = {"n": 64, "seconds": [3.0, 1.0, 2.0], "median_seconds": 2.0}
    summary = mm.point_summary(old)
    assert summary["median"] == 2.0 and (summary["min"], summary["max"]) == (1.0, 3.0)
    assert summary["n"] == 3
    rate = mm.rate_summary(old)
    assert rate["median"] == pytest.approx(mm.gflops(64, 2.0))
    assert rate["max"] == pytest.approx(mm.gflops(64, 1.0))
    assert mm.point_summary({"n": 64, "seconds": []}) is None


def test_overlapping_precisions_are_no_measurable_difference(tmp_path):
    cpu32 = made_up("cpu", at_sizes(10, 20, 30, 40))
    close = made_up("cpu", at_sizes(10, 20, 30, 41), dtype="bfloat16")  # ranges overlap
    apart = made_up("cpu", at_sizes(10, 20, 30, 80), dtype="float16")
    values = mp.substitutions(write(tmp_path / "m.jsonl", [cpu32, close, apart]))
    assert values["ref_mm_cpu_bfloat16_by_size"].startswith(f"{summaries.NO_DIFFERENCE} at any size")
    assert values["ref_mm_cpu_float16_by_size"] == (
        f"faster at n = 1,024, with {summaries.NO_DIFFERENCE} at n = 16, 64 and 256")
    # the best size of a sweep names the sizes it cannot be told apart from
    both = made_up("cpu", at_sizes(10, 20, 39, 40))
    values = mp.substitutions(write(tmp_path / "b.jsonl", [both]))
    assert values["ref_mm_cpu_float32"].endswith(f"at n = 1,024 ({summaries.NO_DIFFERENCE} from n = 256)")


def test_alt_texts_describe_what_is_drawn():
    cpu_only = [made_up("cpu", at_sizes(10, 20, 30, 40)),
                made_up("cpu", at_sizes(8, 15, 25, 35), dtype="bfloat16")]
    for alt in (gflops_alt(cpu_only), sync_alt(cpu_only)):
        assert "GPU" not in alt and "CPU" in alt, alt
    assert "CPU float32" in gflops_alt(cpu_only) and "CPU bfloat16" in gflops_alt(cpu_only)
    assert "0.04 TFLOP/s at n = 1,024" in gflops_alt(cpu_only)  # numbers from the drawn data
    assert "median time per call over 3 windows of calls" in gflops_alt(cpu_only)
    assert "CPU float16" not in gflops_alt(cpu_only)  # not measured, so not drawn

    with_gpu = [*cpu_only, made_up("gpu", at_sizes(1, 5, 300, 900), transfer=0.01)]
    alt = gflops_alt(with_gpu)
    assert "GPU float32" in alt and "copying the inputs" in alt
    assert "line at n = 256" in alt and "0.9 TFLOP/s at n = 1,024" in alt
    gpu_seconds = 2 * 1024**3 / 900e9
    assert f"a call in a window of 10 took {duration(gpu_seconds)}" in sync_alt(with_gpu)
    # every line of the figure is named in its alt text, and nothing else
    fig, _ = matmul.figures(with_gpu)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert labels and all(label in alt for label in labels)
    assert "GPU float16" not in alt


def test_the_figures_draw_the_spread_of_the_repeats():
    from matplotlib.collections import LineCollection

    records = [made_up("cpu", at_sizes(10, 20, 30, 40))]
    fig, _ = matmul.figures(records)
    ax = fig.axes[0]
    whiskers = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert whiskers and sum(len(c.get_segments()) for c in whiskers) == len(SIZES)
    dots = [line for line in ax.get_lines() if line.get_marker() == "."]
    assert sorted(len(d.get_xdata()) for d in dots) == [3] * len(SIZES)  # every call
    assert "whiskers: fastest to slowest" in ax.get_title()
    texts = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
    assert "GPU:" in texts and "Made-up GPU" not in fig._suptitle.get_text()


def test_the_page_uses_the_generated_alt_texts():
    text = (ROOT / "_episodes" / "06-why-gpus-are-fast.md").read_text(encoding="utf-8")
    assert ":alt: {{ ref_mm_fig_gflops_alt }}" in text and ":alt: {{ ref_mm_fig_sync_alt }}" in text
    values = mp.substitutions()
    throughput = matmul.reference_run()
    assert values["ref_mm_fig_gflops_alt"] == (gflops_alt(throughput) if throughput
                                               else NOT_RECORDED)
    assert values["ref_mm_fig_sync_alt"] == sync_alt(matmul.latency_run())
    if not any(is_gpu(r) for r in matmul.reference_run()):
        assert "GPU" not in values["ref_mm_fig_gflops_alt"]
    if not any(is_gpu(r) for r in matmul.latency_run()):
        assert "GPU" not in values["ref_mm_fig_sync_alt"]


# --- the committed results and figures ---------------------------------------------------------

def test_the_results_file_holds_a_valid_run():
    latency = matmul.latency_run()
    assert latency, f"{matmul.RESULTS_FILE} must hold a run: python -m gpulesson.experiments.matmul"
    values = mp.substitutions()
    assert values["ref_mm_lat_cpu_largest_time"] != NOT_RECORDED
    records = matmul.reference_run()
    if not records:  # no run of the current method yet: no throughput on the page
        assert not any(mm.amortised(r) for r in read_records(matmul.RESULTS_FILE))
        assert values["ref_mm_cpu_float32"] == values["ref_mm_gpu"] == NOT_RECORDED
        assert values["ref_mm_run"] == values["ref_mm_crossover"] == NOT_RECORDED
        return
    assert len({r["run_id"] for r in records}) == 1
    for record in records:
        validate_record(record)
        assert record["experiment"] == "matmul" and record["cpu_model"] and record["points"]
        assert mm.amortised(record)
    assert values["ref_mm_cpu_float32"] != NOT_RECORDED
    # records made before the summaries still give medians with their ranges
    repeats = {r["repeats"] for r in records}
    assert all(f"{n} repeats" in values["ref_mm_cpu_float32"] for n in repeats)
    assert "range" in values["ref_mm_cpu_largest_time"]
    if not any(is_gpu(r) for r in records):  # honest about what is missing
        assert values["ref_mm_gpu"] == values["ref_mm_crossover"] == NOT_RECORDED


def test_the_committed_schematic_is_what_its_script_draws(tmp_path):
    # the records' figures: test_reference.py, for every experiment
    path = load_script(FIG / "cores.py").draw(tmp_path / "cores.svg")
    committed = FIG / path.name
    assert committed.exists(), f"{committed} is missing: run make figures"
    assert path.read_bytes() == committed.read_bytes(), (
        f"{committed.name} is not what its source draws: run make figures")


# --- command line -------------------------------------------------------------------------------

@pytest.mark.bad_input("no GPU")
def test_the_command_refuses_a_gpu_it_cannot_see(tmp_path, capsys):
    from gpulesson.machine.devices import keras_device

    if keras_device()["gpu_count"]:
        pytest.skip("this machine has a GPU")
    out = tmp_path / "never.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        matmul_main(["--devices", "gpu", "--sizes", "4", "--out", str(out)])
    assert exit_info.value.code == 2 and "No GPU is visible" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("args, message", [
    (["--devices", "tpu"], "invalid choice: 'tpu'"),
    (["--sizes", "16", "0"], "at least 1, not 0"),
    (["--dtypes", "float64"], "invalid choice: 'float64'"),
    (["--repeats", "0"], "at least 1"),
])
@pytest.mark.bad_input("bad argument")
def test_the_command_rejects_bad_arguments(tmp_path, capsys, args, message):
    out = tmp_path / "never.jsonl"
    with pytest.raises(SystemExit) as exit_info:
        matmul_main([*args, "--out", str(out)])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not out.exists()


def test_the_command_runs_on_jax_without_tensorflow_or_h5py(tmp_path):
    """The GPU machine has JAX and Keras but no TensorFlow: the command must not need it."""
    out = tmp_path / "jax.jsonl"
    code = (
        "import sys\n"
        "sys.modules['tensorflow'] = None  # importing it now fails, as if not installed\n"
        "sys.modules['h5py'] = None\n"
        "from gpulesson.experiments.matmul.__main__ import main as matmul_main\n"
        f"status = matmul_main(['--devices', 'cpu', '--sizes', '4', '8', '--repeats', '1',\n"
        f"                      '--dtypes', 'float32', 'bfloat16', '--out', {str(out)!r}])\n"
        "sys.exit(status)\n"
    )
    env = {**os.environ, "KERAS_BACKEND": "jax", "JAX_PLATFORMS": "cpu"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=False, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    records = read_records(out)
    assert [(r["device_kind"], r["dtype"]) for r in records] == [("cpu", "float32"),
                                                                ("cpu", "bfloat16")]
    assert {r["backend"] for r in records} == {"jax"} and len({r["run_id"] for r in records}) == 1
    assert records[0]["versions"]["h5py"] is None and "GFLOP/s (median over windows" in done.stdout


def test_the_description_of_a_cpu_only_sweep_says_that_no_gpu_was_swept():
    """A learner without a GPU reads why there is no crossover, not "not recorded yet"."""
    from gpulesson.experiments.matmul.page import describe

    cpu_only = describe([made_up("cpu", at_sizes(10, 20, 30, 40))])
    assert "GPU faster (float32) from: no GPU sweep in these records" in cpu_only
    both = describe([made_up("cpu", at_sizes(10, 20, 30, 40)),
                     made_up("gpu", at_sizes(1, 5, 300, 900))])
    assert "GPU faster (float32) from: n = 256" in both
