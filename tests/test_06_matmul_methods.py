"""Episode 6's matrix products measure the card, not the round trip: latency and throughput
apart, windows of calls chosen so that one wait is under 5 % of a window and each lasts at least
half a second, with the clock and power of each (checked on a made-up
device with its own clock, so that no test depends on the machine's speed), precisions named as
recorded, the card's published peaks, the GPU's fixed cost per call, one synchronised call
beside the windows, and which method's run the page shows."""

import math
import types

import numpy as np
import pytest
from gpulesson.experiments.matmul.__main__ import main as matmul_main
from test_06_matmul import at_sizes, made_up, write

from gpulesson.experiments import matmul
from gpulesson.experiments.matmul import measure, probes
from gpulesson.experiments.matmul import page as mp
from gpulesson.experiments.matmul.page import gflops_alt
from gpulesson.machine import gpu_peaks
from gpulesson.records.results import NOT_RECORDED, read_records
from gpulesson.records.summaries import summarise

# --- a made-up device: calls queue up, a wait is a round trip -----------------------------------


class FakeDevice:
    """A device with its own clock: a call costs ``dispatch`` seconds of the host and queues
    ``work`` seconds on the device (or runs them before returning, ``synchronous``); a wait
    lasts until the queue is done, plus ``round_trip``."""

    def __init__(self, dispatch, work, round_trip, synchronous=False):
        self.dispatch, self.work, self.round_trip = dispatch, work, round_trip
        self.synchronous, self.now, self.free_at, self.calls = synchronous, 0.0, 0.0, 0

    def clock(self):
        return self.now

    def op(self, a, b):
        self.calls += 1
        self.now += self.dispatch
        if self.synchronous:
            self.now += self.work
            self.free_at = self.now
        else:
            self.free_at = max(self.free_at, self.now) + self.work
        return FakeResult(self)


class FakeResult:
    shape = (4, 4)

    def __init__(self, device):
        self.device = device

    def __getitem__(self, index):
        return self

    def __array__(self, dtype=None, copy=None):
        device = self.device
        device.now = max(device.now, device.free_at) + device.round_trip
        return np.zeros((1, 1), dtype="float32")


@pytest.fixture
def fake(monkeypatch):
    def make(**kwargs):
        device = FakeDevice(**kwargs)
        monkeypatch.setattr(measure, "time", types.SimpleNamespace(perf_counter=device.clock))
        return device
    return make


def test_a_small_product_on_a_gpu_like_device_is_timed_as_latency_and_as_throughput(fake):
    """Dispatch 30 µs, work 3 µs, round trip 550 µs: one synchronised call is the round trip;
    queued calls cost their dispatch. The old method gave the round trip as the rate."""
    device = fake(dispatch=30e-6, work=3e-6, round_trip=550e-6)
    point = matmul.time_matmul(16, repeats=3, op=device.op)
    assert point["latency"]["median"] == pytest.approx(30e-6 + 3e-6 + 550e-6)
    assert point["calls_per_sync"] > 100
    assert point["overhead_share"] <= measure.MAX_OVERHEAD_SHARE
    # the window's fixed cost is paid once: the time per call is near the dispatch
    assert point["median_seconds"] < point["latency"]["median"] / 10
    assert point["median_seconds"] == pytest.approx(30e-6, rel=0.1)
    assert point["gflops"] == pytest.approx(measure.gflops(16, point["median_seconds"]))


def test_every_window_lasts_at_least_half_a_second(fake):
    """A large product's one call (20 ms) is long enough for the wait's share, but not for a
    card's clock and power to settle: the window holds 25 calls."""
    device = fake(dispatch=30e-6, work=20e-3, round_trip=500e-6)
    point = matmul.time_matmul(1024, repeats=3, op=device.op)
    assert point["calls_per_sync"] == 25
    assert min(point["window_seconds"]) >= measure.MIN_WINDOW_SECONDS
    assert point["overhead_share"] <= measure.MAX_OVERHEAD_SHARE
    assert point["window_sensor"] is None  # no sensor given: none read


def test_a_backend_that_computes_before_returning_has_no_overhead_to_amortise(fake):
    """TensorFlow on the CPU: the call returns when the product is done; a wait costs 10 µs."""
    device = fake(dispatch=0.0, work=10e-3, round_trip=10e-6, synchronous=True)
    point = matmul.time_matmul(1024, repeats=3, op=device.op)
    assert point["calls_per_sync"] == 50  # half a second of calls
    assert point["sync_overhead_seconds"] == pytest.approx(10e-6)


class FakeNvml:
    """NVML's two readings on the made-up device's clock: the SM clock droops from 1980 MHz by
    10 MHz a millisecond of device time, and the board draws 700 W (NVML reports mW)."""

    NVML_CLOCK_SM = 1

    def __init__(self, device):
        self.device = device

    def nvmlDeviceGetClockInfo(self, handle, kind):
        assert kind == self.NVML_CLOCK_SM
        return 1980 - 10 * round(self.device.now * 1e3)

    def nvmlDeviceGetPowerUsage(self, handle):
        return 700_000


def test_each_window_keeps_the_clock_and_power_it_ran_at(fake):
    """The sensor's samples of a window are the window's; a later window of the same size
    shows the lower clock, so a slower window can be told from droop."""
    device = fake(dispatch=30e-6, work=2e-3, round_trip=500e-6)
    sensor = probes.WindowSensor(FakeNvml(device), handle=None, poll=None, clock=device.clock)
    point = matmul.time_matmul(512, repeats=3, op=device.op, sensor=sensor)
    readings = point["window_sensor"]
    assert len(readings) == len(point["window_seconds"]) == 3
    assert all(r["watts"] == 700 and r["samples"] == 1 for r in readings)
    clocks = [r["sm_clock_mhz"] for r in readings]
    assert clocks[0] > clocks[1] > clocks[2]
    assert sensor.window(-1.0, -0.5)["samples"] == 1  # no sample inside: one is taken now


def test_a_machine_without_nvml_says_why():
    assert probes.open_sensor("cpu") == (None, "the CPU's clock and power are not sampled")


def test_the_copy_is_timed_from_pageable_and_from_pinned_memory():
    """With JAX, both kinds of host memory exist on the CPU too: both copies are timed, and
    each is named in the record."""
    import keras

    host = [np.ones((64, 64), "float32")] * 2
    fields = probes.copy_fields(host, "cpu", "float32", measure.wait, 2)
    assert fields["transfer_memory"] == "pageable" and fields["transfer_bytes"] == 2 * 64 * 64 * 4
    assert len(fields["transfer_seconds"]) == 2 and fields["transfer_median_seconds"] > 0
    if keras.backend.backend() == "jax":
        assert len(fields["pinned_transfer_seconds"]) == 2
        assert fields["pinned_transfer_unsupported"] is None
    else:
        assert "JAX backend only" in fields["pinned_transfer_unsupported"]


def test_the_window_grows_when_its_share_came_out_too_large(fake, monkeypatch):
    """A first estimate that is too small is corrected: the windows are timed again with more
    calls until one wait is under the limit."""
    device = fake(dispatch=30e-6, work=3e-6, round_trip=550e-6)
    monkeypatch.setattr(measure, "calls_per_window", lambda per_call, fixed: 4)
    point = matmul.time_matmul(16, repeats=3, op=device.op)
    assert point["calls_per_sync"] > 4
    assert point["overhead_share"] <= measure.MAX_OVERHEAD_SHARE


@pytest.mark.parametrize("per_call, fixed, expected", [
    (1.0, 1e-5, 1),  # one call is longer than half a second: one call is a window
    (1e-3, 1e-5, 500),  # the wait is 1 % of one call, but a window lasts half a second
    (0.1, 1.0, math.ceil(1.0 * 0.975 / (0.025 * 0.1))),  # the wait's share decides
    (1e-9, 1.0, 200_000),  # at most MAX_CALLS
])
def test_calls_per_window(per_call, fixed, expected):
    assert measure.calls_per_window(per_call, fixed) == expected


def test_the_overhead_comes_from_two_windows_and_is_bounded():
    # latency 583 µs, 17 queued calls in 1.063 ms: 30 µs a call, the rest is fixed
    fixed, per_call = measure.overhead(583e-6, 583e-6 + 16 * 30e-6, 17, 500e-6, 33e-6)
    assert per_call == pytest.approx(30e-6) and fixed == pytest.approx(533e-6, rel=0.01)
    # noise on a busy machine cannot make the overhead more than a dispatch and a wait
    fixed, _ = measure.overhead(1.0, 1.2, 2, 1e-4, 1e-3)
    assert fixed == pytest.approx(1e-3 + 1e-4)


# --- records of two methods on the page ------------------------------------------------------------

H200 = {"gpu": {"name": "NVIDIA H200"}, "device": "NVIDIA H200",
        "float32_precision": {"matmul": "tf32", "convolution": "tf32", "setting": "test"}}


def old_run(run_id="old"):
    return [made_up("cpu", at_sizes(10, 20, 30, 40), method=None, run_id=run_id),
            made_up("gpu", at_sizes(0.01, 0.5, 30, 2000), method=None, run_id=run_id,
                    **H200)]


def test_a_run_cut_short_is_not_the_throughputs_comparison(tmp_path):
    """A GPU half alone, or a GPU precision without its CPU sweep, compares nothing: the
    throughput keeps no reference rather than a table of missing cells."""
    cpu = made_up("cpu", at_sizes(10, 20, 30, 40), run_id="cut")
    gpu = made_up("gpu", at_sizes(1, 50, 3000, 98_950), run_id="cut", **H200)
    bf16 = made_up("gpu", at_sizes(1, 50, 3000, 98_950), run_id="cut", dtype="bfloat16",
                   **H200)
    assert matmul.reference_run(write(tmp_path / "a.jsonl", [gpu])) == []
    assert matmul.reference_run(write(tmp_path / "b.jsonl", [cpu, gpu, bf16])) == []
    assert len(matmul.reference_run(write(tmp_path / "c.jsonl", [cpu, gpu]))) == 2


def test_new_records_are_the_throughput_and_old_ones_stay_latencies(tmp_path):
    new = [made_up("cpu", at_sizes(10, 20, 30, 40), run_id="new")]
    path = write(tmp_path / "m.jsonl", old_run() + new)
    assert {r["run_id"] for r in matmul.reference_run(path)} == {"new"}
    assert {r["run_id"] for r in matmul.latency_run(path)} == {"old"}
    values = mp.substitutions(path)
    assert values["ref_mm_cpu_float32"].startswith("0.04 TFLOP/s")
    assert values["ref_mm_gpu"] == NOT_RECORDED and values["ref_mm_lat_gpu"] == "NVIDIA H200"
    assert values["ref_mm_cpu_calls"] == "10" and values["ref_mm_cpu_overhead"] == "2.0%"


def test_float32_is_named_as_recorded_and_set_beside_the_published_peak(tmp_path):
    records = [made_up("cpu", at_sizes(10, 20, 30, 40)),
               made_up("gpu", at_sizes(1, 50, 3000, 247_250), **H200),
               made_up("gpu", at_sizes(1, 50, 3000, 98_950), dtype="bfloat16", **H200),
               made_up("cpu", at_sizes(10, 20, 30, 40), dtype="bfloat16")]
    assert measure.precision_label(records[1]) == "float32 (TF32)"
    assert measure.precision_label(records[0]) == "float32"
    assert measure.precision_label(records[2]) == "bfloat16"
    assert measure.published_peak(records[1])["gflops"] == gpu_peaks.peaks_for("H200")["tf32"] * 1e3
    assert measure.published_peak(records[0]) is None
    full = {**records[1], "float32_precision": {"matmul": "float32"}}
    assert measure.published_peak(full)["precision"] == "fp32"
    values = mp.substitutions(write(tmp_path / "m.jsonl", records))
    assert values["ref_mm_gpu_float32_label"] == "float32 (TF32)"
    assert values["ref_mm_gpu_float32_share"] == "50% of the published TF32 peak"
    assert values["ref_mm_gpu_bfloat16_share"] == "10% of the published BF16 peak"
    assert "TF32 494.5 TFLOP/s" in values["ref_mm_gpu_peaks"]
    assert "BF16 989.5 TFLOP/s" in values["ref_mm_gpu_peaks"]
    assert "data sheet" in values["ref_mm_gpu_peaks"]
    assert "H200" in values["ref_mm_gpu_peaks"]
    fig, _ = matmul.figures(records)
    labels = fig.axes[0].get_legend_handles_labels()[1]
    assert "GPU float32 (TF32)" in labels
    peaks = [label for label in labels if "published" in label]
    assert peaks == ["H200 published TF32 peak (494.5 TFLOP/s)",
                     "H200 published BF16 peak (989.5 TFLOP/s)"]
    alt = gflops_alt(records)
    assert all(label in alt for label in labels)


def test_a_gpu_without_a_table_draws_no_peak():
    record = made_up("gpu", at_sizes(1, 5, 300, 900))  # "Made-up GPU"
    assert measure.published_peak(record) is None
    fig, _ = matmul.figures([record])
    assert not [label for label in fig.axes[0].get_legend_handles_labels()[1]
                if "published" in label]


@pytest.mark.bad_input("bad argument")
def test_the_command_does_not_go_on_with_a_run_of_the_older_method(tmp_path, capsys):
    path = write(tmp_path / "m.jsonl", old_run("r0"))
    with pytest.raises(SystemExit) as exit_info:
        matmul_main(["--devices", "cpu", "--sizes", "4", "--run-id", "r0", "--out", str(path)])
    assert exit_info.value.code == 2 and "older method" in capsys.readouterr().err
    assert len(read_records(path)) == 2  # nothing added


def test_gpu_sweeps_go_to_16384_and_the_cpu_stays_capped():
    assert measure.sizes_for("gpu")[-1] == 16384 and measure.sizes_for("cpu") == matmul.SIZES
    assert measure.MAX_SECONDS == 20.0


def test_the_previous_method_stays_the_reference_until_the_new_one_has_a_gpu(tmp_path):
    """A new method's CPU-only run does not hide the previous method's run with the card; a new
    run with the card replaces it. The page names the method of what it shows."""
    rates = at_sizes(10, 20, 30, 40)
    before = [made_up("cpu", rates, run_id="before", method="amortised"),
              made_up("gpu", rates, run_id="before", method="amortised", **H200)]
    path = write(tmp_path / "m.jsonl", [*before, made_up("cpu", rates, run_id="cpu-only")])
    assert {r["run_id"] for r in matmul.reference_run(path)} == {"before"}
    assert "recorded before" in mp.substitutions(path)["ref_mm_method_note"]
    write(path, [made_up("cpu", rates, run_id="new"), made_up("gpu", rates, run_id="new", **H200)])
    assert {r["run_id"] for r in matmul.reference_run(path)} == {"new"}
    assert "at least 0.5 s" in mp.substitutions(path)["ref_mm_method_note"]


def test_the_copy_names_the_host_memory_it_came_from():
    point = {"n": 1024, "transfer_median_seconds": 8e-3, "transfer_bytes": 8_000_000}
    from gpulesson.experiments.matmul.page import copy_text

    assert copy_text(point).startswith("from pageable host memory (a NumPy array), 1 GB/s; "
                                       "this run did not time a copy from pinned memory")
    both = {**point, "pinned_transfer_median_seconds": 2e-3}
    assert copy_text(both).endswith("; from pinned (page-locked) host memory, 4 GB/s")
    refused = {**point, "pinned_transfer_unsupported": "NotImplementedError: JAX only"}
    assert copy_text(refused).endswith("could not be made: NotImplementedError: JAX only")


def test_the_throughput_axis_is_in_tflops_with_the_gpus_fixed_cost_per_call_shaded(tmp_path):
    """Calls that take 70-100 µs while the work grows 4,096-fold have a fixed cost per call: the
    figure shades those sizes and says so, not that the cost is flat (it rose), the axis is in
    TFLOP/s (not up to 10^6 GFLOP/s), and the page and the alt text give the same words."""
    from matplotlib.patches import Polygon, Rectangle

    flat = {16: 70e-6, 64: 100e-6, 256: 90e-6, 1024: 2e-3, 4096: 0.2}  # seconds per call
    gpu = made_up("gpu", {n: 2 * n**3 / t / 1e9 for n, t in flat.items()}, **H200)
    cpu = made_up("cpu", dict(zip(flat, (10, 20, 30, 40, 40), strict=True)))
    floor = measure.fixed_cost([cpu, gpu])
    assert floor["sizes"] == [16, 64, 256]
    assert (floor["low"], floor["high"]) == (pytest.approx(70e-6), pytest.approx(100e-6))
    assert measure.fixed_cost([cpu]) is None  # the CPU has no dispatch to the card
    assert measure.fixed_cost([cpu, {**gpu, "method": None}]) is None  # older method: latencies
    fig, _ = matmul.figures([cpu, gpu])
    ax = fig.axes[0]
    assert ax.get_ylabel().startswith("TFLOP/s")
    drawn = next(line for line in ax.get_lines() if line.get_label() == "GPU float32 (TF32)")
    assert drawn.get_ydata()[-1] == pytest.approx(2 * 4096**3 / 0.2 / 1e12)  # TFLOP/s
    assert ax.get_ylim()[1] < 1e4  # the peaks (494.5, 989.5 TFLOP/s) set the top, not 10^6
    bands = [p for p in ax.patches if isinstance(p, (Polygon, Rectangle))
             and p.get_facecolor()[3] < 0.5]
    assert len(bands) == 1
    xs = [x for x, _ in bands[0].get_xy()] if isinstance(bands[0], Polygon) else [
        bands[0].get_x(), bands[0].get_x() + bands[0].get_width()]
    assert min(xs) < 16 and 256 < max(xs) < 1024
    label = next(t.get_text() for t in ax.texts if "fixed cost" in t.get_text())
    assert "70 µs–100 µs" in label and "n = 16 to 256" in label
    words = ("70 µs–100 µs a call (medians) at every n from 16 to 256, while the arithmetic grew "
             "4,096-fold; a call at n = 256 was 1.3× slower than at n = 16")
    assert words in gflops_alt([cpu, gpu])
    assert mp.substitutions(write(tmp_path / "m.jsonl", [cpu, gpu]))["ref_mm_gpu_floor"] == words
    assert mp.substitutions(write(tmp_path / "c.jsonl", [cpu]))["ref_mm_gpu_floor"] == NOT_RECORDED


def test_one_synchronised_call_is_set_beside_the_windows_and_their_first_window():
    """The best median rate of one synchronised call, beside a call in a window of its size; the
    sizes from which each GPU sweep's first window was its fastest (a clock that fell fits both)."""
    gpu = made_up("gpu", at_sizes(1, 50, 3000, 98_950), **H200)  # calls 0.5 ms slower than windows
    assert measure.sync_beside_windows([gpu])[1].startswith(
        "One synchronised call reached its best median rate at n = 1,024: ")
    assert "slower than a call in a window there" in measure.sync_beside_windows([gpu])[1]
    gpu["points"][-1]["latency"] = summarise([1e-5, 1.1e-5, 1.2e-5])  # now faster than a window
    gpu["points"][1]["seconds"].reverse()  # n = 64: the first window was the slowest
    rate, words = measure.sync_beside_windows([gpu])
    assert rate == f"{2 * 1024**3 / 1.1e-5 / 1e12:.3g} TFLOP/s at n = 1,024"
    assert "faster than a call in a window there" in words
    assert "at each n from 256 up, the first of the windows was the fastest" in words
    assert words.endswith("the single calls ran before the windows.")
    assert measure.sync_beside_windows([]) == (NOT_RECORDED, NOT_RECORDED)
