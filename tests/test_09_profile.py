"""Episode 9's profile of a training step (``gpulesson.experiments.profile``): reading a trace,
the arithmetic, the page without and with GPU records, and one real trace of a few steps."""

import gzip
import json

import pytest
from conftest import run_on_jax_cpu

from gpulesson.experiments.profile import measure, page
from gpulesson.machine.timing import Budget
from gpulesson.records.results import NOT_RECORDED, append_record


def _event(name, ts, dur, pid=1, tid=1):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def _meta(kind, pid, name, tid=None):
    return {"ph": "M", "name": f"{kind}_name", "pid": pid, "tid": tid, "args": {"name": name}}


def gpu_shaped_trace(tmp_path):
    """A made-up trace shaped like a GPU's: 2 steps in a window of 1,000 µs. The host fetches
    for 100 µs and dispatches for 200 µs (a call made while fetching counts as input); the GPU
    computes 300 µs (two overlapping kernels on two streams merge), copies 100 µs of which 20
    overlap a kernel, and idles the rest. XLA's module summary line is not read."""
    events = [
        _meta("process", 1, "/host:CPU"), _meta("thread", 1, "python", 1),
        _meta("process", 2, "/device:GPU:0 (NVIDIA H200)"),
        _meta("thread", 2, "Stream #13(Compute,MemcpyD2H)", 13),
        _meta("thread", 2, "Stream #14(Compute)", 14),
        _meta("thread", 2, "Stream #7(MemcpyH2D)", 7), _meta("thread", 2, "XLA Modules", 99),
        _event(measure.EPOCH, 1000, 1000),
        _event(measure.INPUT, 1000, 100), _event("PjitFunction(take)", 1050, 20),
        _event("PjitFunction(train_step)", 1100, 150), _event("PjitFunction(train_step)", 1500, 50),
        _event("fusion.1", 1200, 200, pid=2, tid=13), _event("fusion.2", 1300, 150, pid=2, tid=14),
        _event("convolution", 1600, 50, pid=2, tid=13),
        _event("MemcpyH2D", 1120, 100, pid=2, tid=7),
        _event("jit_train_step", 1100, 800, pid=2, tid=99),
        _event("outside the window", 5000, 100, pid=2, tid=13),
    ]
    path = tmp_path / "plugins" / "profile" / "run" / "host.trace.json.gz"
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    return tmp_path


def test_a_trace_is_read_into_parts_that_add_up_to_the_step(tmp_path):
    events = measure.read_events(gpu_shaped_trace(tmp_path))
    found = measure.breakdown(events, steps=2, device="gpu")
    us = 1e-6 / 2
    assert found["step"] == pytest.approx(1000 * us)
    assert found["host"] == pytest.approx({"input": 100 * us, "dispatch": 200 * us,
                                           "other": 700 * us})
    assert found["device"] == pytest.approx({"kernels": 300 * us, "copies": 80 * us,
                                             "idle": 620 * us})
    assert sum(found["host"].values()) == pytest.approx(found["step"])
    assert sum(found["device"].values()) == pytest.approx(found["step"])
    assert "XLA Modules" not in found["device_lines"]
    assert found["top_kernels"][0] == ["fusion.1", pytest.approx(200 * us)]
    # The CPU's profile on the same node reads XLA's threads on the host, not the GPU's lines
    on_cpu = measure.breakdown(events, steps=2, device="cpu")
    assert on_cpu["device"]["kernels"] == 0 and on_cpu["device_lines"] == []


def test_a_trace_without_its_window_or_a_folder_without_a_trace_says_so(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"jax\.profiler\.trace"):
        measure.read_events(tmp_path)
    with pytest.raises(ValueError, match="not marked"):
        measure.breakdown([_event("x", 0, 1) | {"process": "/host:CPU", "thread": "python"}],
                        steps=1)
    window = _event(measure.EPOCH, 0, 10) | {"process": "/host:CPU", "thread": "python"}
    with pytest.raises(ValueError, match="no GPU line"):
        measure.breakdown([window], steps=1, device="gpu")


def made_record(device, *, step, host, dev, gpu=None, run_id="r1"):
    budget = Budget(1, 2)
    budget.seconds = [9.0, step * 10, step * 10]
    record = measure.measurement_record(
        budget, run_id=run_id, device=device, batch_size=256, n_images=2560, steps=10,
        forward_flops=31_000_000,
        utilisation={"skipped": "the CPU has no NVML utilisation"} if device == "cpu"
        else {"mean": 35.0, "min": 20.0, "max": 50.0, "n": 6, "interval_seconds": 0.05},
        profile={"steps": 10, "step": step, "host": host, "device": dev, "device_lines": [],
                 "top_kernels": []},
        data="synthetic")
    if gpu:
        # Shaped as a GPU record keeps it (gpulesson.machine.devices.float32_precision).
        precision = {"matmul": "tf32", "convolution": "tf32", "setting": "test"}
        record.update({"device": gpu, "gpu": {"name": gpu}, "float32_precision": precision})
    return record


def test_the_achieved_rate_is_three_forward_passes_per_image_and_set_beside_the_peak():
    record = made_record("gpu", step=0.002, gpu="NVIDIA H200",
                         host={"input": 0.0004, "dispatch": 0.0003, "other": 0.0013},
                         dev={"kernels": 0.0005, "copies": 0.0, "idle": 0.0015})
    # 2,560 images in 0.02 s, 3 x 31 MFLOP each
    assert record["achieved_tflops"] == pytest.approx(3 * 31e6 * 2560 / 0.02 / 1e12)
    found = page.peak(record)
    assert found["precision"] == "tf32" and found["tflops"] == 494.5
    assert found["share"] == pytest.approx(record["achieved_tflops"] / 494.5)
    assert page.peak(made_record("cpu", step=0.3, host={}, dev={})) is None


def test_without_records_the_page_says_not_recorded_and_with_them_answers_the_exercise(tmp_path):
    values = page.substitutions(tmp_path / "none.jsonl")
    assert values["ref_prof_gpu"] == NOT_RECORDED and values["ref_prof_cut"] == NOT_RECORDED
    path = tmp_path / "profile.jsonl"
    append_record(path, made_record("cpu", step=0.3, host={"input": 0.001, "dispatch": 0.001,
                                                           "other": 0.298},
                                    dev={"kernels": 0.29, "copies": 0.0, "idle": 0.01}))
    append_record(path, made_record("gpu", step=0.002, gpu="NVIDIA H200",
                                    host={"input": 0.0004, "dispatch": 0.0003, "other": 0.0013},
                                    dev={"kernels": 0.0005, "copies": 0.0, "idle": 0.0015}))
    values = page.substitutions(path)
    assert values["ref_prof_gpu"] == "NVIDIA H200"
    assert "| CPU (" in values["ref_prof_table"] and "| GPU (NVIDIA H200)" in values["ref_prof_table"]
    assert "11.9 (2.4% of TF32) | 35 % |" in values["ref_prof_table"]  # of 494.5 TFLOP/s
    assert "| not sampled |" in values["ref_prof_table"]
    # the CPU computes most of its step: cut the arithmetic; the GPU waits for the host's loop
    assert "CPU (" in values["ref_prof_cut"]
    # the shares are of the profiled step, which the profiler's overhead inflates
    assert "of the profiled step, kernels 97%; cut the arithmetic first" in values["ref_prof_cut"]
    assert ("of the profiled step, kernels 25%; cut the host's rest of fit (65%) first"
            in values["ref_prof_cut"])
    # each device's run says whether its generator read ahead
    assert values["ref_prof_when"].count(", not reading ahead") == 2
    append_record(path, {**page.RECORDS.read(path)[1], "run_id": "r2", "read_ahead": True})
    when = page.substitutions(path)["ref_prof_when"]
    assert "; GPU: run r2, " in when and when.endswith(", reading ahead")
    assert page.REMEDIES["other"] in values["ref_prof_cut"]
    # a CPU's arithmetic: never mixed precision, which most CPUs run slower
    assert page.CPU_KERNELS in values["ref_prof_cut"] and "bfloat16" not in values["ref_prof_cut"]
    shown = page.reference_run(path)
    gpu_lines, cpu_lines = (" ".join(page.summary_lines(page.RECORDS.find(shown, device_kind=d)))
                            for d in ("gpu", "cpu"))
    assert "NVIDIA H200's published dense TF32 peak (494.5 TFLOP/s)" in gpu_lines
    assert "35 % on average" in gpu_lines and "not sampled" in cpu_lines
    assert "GPU (NVIDIA H200): a step of 2 ms" in values["ref_prof_alt"]
    (fig,) = page.figures(page.reference_run(path))
    assert len(fig.axes) == 2


def test_a_device_whose_trace_could_not_be_read_keeps_its_record_and_leaves_the_table(tmp_path):
    path = tmp_path / "profile.jsonl"
    cpu = made_record("cpu", step=0.3, host={"input": 0.001, "dispatch": 0.001, "other": 0.298},
                      dev={"kernels": 0.29, "copies": 0.0, "idle": 0.01})
    gpu = made_record("gpu", step=0.002, gpu="NVIDIA H200", host={}, dev={})
    gpu["profile"] = {"failed": "ValueError: the trace has no GPU line"}
    for record in (cpu, gpu):
        append_record(path, record)
    values = page.substitutions(path)
    assert "| GPU" not in values["ref_prof_table"] and "| CPU (" in values["ref_prof_table"]
    assert values["ref_prof_gpu"] == NOT_RECORDED
    assert "Not profiled (ValueError: the trace has no GPU line)" in \
        page.describe(page.reference_run(path))
    assert "GPU" not in values["ref_prof_cut"]
    (fig,) = page.figures(page.reference_run(path))
    assert len(fig.axes) == 1


_TRACE = '''
import json
import numpy as np
from gpulesson.experiments.ceiling.measure import tiny_model
from gpulesson.experiments.feeding.pipelines import ArrayBatches
from gpulesson.experiments.profile.measure import profile_steps

x = np.random.default_rng(0).integers(0, 256, (640, 32, 32, 3), dtype=np.uint8)
y = np.arange(640, dtype=np.int32) % 10
batches = ArrayBatches(x, y, 64)
model = tiny_model("cpu")
model.fit(batches, epochs=1, verbose=0)
print(json.dumps(profile_steps(model, batches, 5)))
'''


def test_a_real_trace_of_a_few_cpu_steps_is_read():
    """``jax.profiler`` on this CPU: the window, the input, the dispatches and XLA's threads
    are all found in the trace it writes."""
    found = run_on_jax_cpu(_TRACE)
    assert found["steps"] == 5 and found["step"] > 0
    assert found["host"]["input"] > 0 and found["host"]["dispatch"] > 0
    assert found["device"]["kernels"] > 0 and found["device"]["copies"] == 0
    assert sum(found["host"].values()) == pytest.approx(found["step"])
    assert sum(found["device"].values()) == pytest.approx(found["step"])
    assert any("XLA" in line for line in found["device_lines"])


def test_bad_options_and_another_backend_get_one_line_that_says_what_to_do(tmp_path, capsys):
    from gpulesson.experiments.profile.__main__ import main

    with pytest.raises(SystemExit) as stopped:
        main(["--steps", "0", "--out", "/nonexistent/profile.jsonl"])
    assert stopped.value.code == 2 and "--steps must be at least 1" in capsys.readouterr().err
    import keras

    if keras.backend.backend() != "jax":  # the tests' default backend: TensorFlow
        with pytest.raises(SystemExit) as stopped:
            main(["--devices", "cpu", "--out", str(tmp_path / "profile.jsonl")])
        assert stopped.value.code == 2 and capsys.readouterr().err.strip() == (
            "The profile reads JAX's profiler: run it with KERAS_BACKEND=jax.")
        assert not (tmp_path / "profile.jsonl").exists()


def test_a_run_of_the_gpu_alone_keeps_the_older_cpu_record_each_named_with_its_run(tmp_path):
    """A GPU node's lease profiles the GPU in a run of its own: the CPU's record of an older
    run stays on the page, and the page names each device's run."""
    path = tmp_path / "profile.jsonl"
    append_record(path, made_record("cpu", step=0.3, run_id="old-cpu",
                                    host={"input": 0.001, "dispatch": 0.001, "other": 0.298},
                                    dev={"kernels": 0.29, "copies": 0.0, "idle": 0.01}))
    append_record(path, made_record("gpu", step=0.002, gpu="NVIDIA H200", run_id="new-gpu",
                                    host={"input": 0.0004, "dispatch": 0.0003, "other": 0.0013},
                                    dev={"kernels": 0.0005, "copies": 0.0, "idle": 0.0015}))
    assert [r["run_id"] for r in page.reference_run(path)] == ["old-cpu", "new-gpu"]
    values = page.substitutions(path)
    assert "| CPU (" in values["ref_prof_table"] and "| GPU (NVIDIA H200)" in values["ref_prof_table"]
    when = values["ref_prof_when"]
    assert when.startswith("CPU: run old-cpu") and "; GPU: run new-gpu" in when, when
    (fig,) = page.figures(page.reference_run(path))
    titles = [ax.get_title(loc="left") for ax in fig.axes]
    assert "run old-cpu" in titles[0] and "run new-gpu" in titles[1], titles


def test_a_committed_gpu_record_is_compared_with_the_peak_of_the_precision_it_ran_in():
    """The peak follows the record's own float32_precision (TF32 convolutions on a Hopper)."""
    from gpulesson.machine.gpu_peaks import float32_key

    for record in page.reference_run():
        found = page.peak(record)
        if found:
            assert found["precision"] == float32_key(record), record["run_id"]


def test_the_share_of_the_peak_is_shown_as_its_two_factors_and_the_profilers_overhead_is_said(
        tmp_path):
    """% of peak = (the kernels' rate while they run, of the peak) × (the kernels' share of the
    step); and a profiled step longer than the timed epochs' one inflates the host's parts."""
    # timed epochs: 0.002 s a step; profiled: 0.003 s, 0.0005 s of it kernels
    gpu = made_record("gpu", step=0.003, gpu="NVIDIA H200",
                      host={"input": 0.0004, "dispatch": 0.0015, "other": 0.0011},
                      dev={"kernels": 0.0005, "copies": 0.0, "idle": 0.0025})
    gpu["step_seconds"] = 0.002  # the timed epochs' step, shorter than the profiled one
    kernel_tflops = 3 * 31e6 * 256 / 0.0005 / 1e12  # a batch's arithmetic over its kernels
    share = kernel_tflops / 494.5  # while the kernels run; they run 0.5 of 3 ms, of 2 ms timed
    extra = page.overhead(gpu)
    assert extra["extra"] == pytest.approx(0.001) and extra["ratio"] == pytest.approx(1.5)
    assert extra["dispatch_at_least"] == pytest.approx(0.0005)
    cpu = made_record("cpu", step=0.3, host={"input": 0.001, "dispatch": 0.001, "other": 0.298},
                      dev={"kernels": 0.29, "copies": 0.0, "idle": 0.01})
    cpu.update(cores_usable=2, cpu_model="Made-up Xeon")
    gpu.update(cores_usable=16, cpu_model="Made-up Xeon")
    assert page.factors_text(cpu) == NOT_RECORDED  # no published peak for a CPU
    assert page.overhead(cpu) is None  # its profiled step was not longer
    path = tmp_path / "profile.jsonl"
    for record in (cpu, gpu):
        append_record(path, record)
    values = page.substitutions(path)
    said = values["ref_prof_factors"]
    assert f"at {kernel_tflops:.3g} TFLOP/s, {share:.1%} of its published dense TF32" in said
    assert f"{share:.1%} × 17% = {share * 0.5 / 3:.1%} in the profiled steps" in said, said
    assert f"{share:.1%} × 25% = {share * 0.5 / 2:.1%} over the timed epochs" in said
    assert "500 µs of kernels" in said
    said = values["ref_prof_overhead"]
    assert "a profiled step took 3 ms" in said and "2 ms (run r1), 50% longer, 1 ms a step" in said
    assert "at least 500 µs (1.5 ms less 1 ms" in said
    # the figure: each part's time on it, the unprofiled step marked, the CPU's machine named
    (fig,) = page.figures(page.reference_run(path))
    cpu_ax, gpu_ax = fig.axes
    assert "the GPU's node has 16 cores" in cpu_ax.get_title(loc="left")
    assert "dispatch\n1.5 ms" in [t.get_text() for t in gpu_ax.texts]
    assert "step without the profiler: 2 ms" in [t.get_text() for t in gpu_ax.texts]
    assert [line.get_xdata()[0] for line in gpu_ax.get_lines()] == [pytest.approx(2.0)]
    assert "another machine" in values["ref_prof_alt"] and "without the profiler, 2 ms" in \
        values["ref_prof_alt"]
    assert values["ref_prof_factors"] != NOT_RECORDED
    empty = page.substitutions(tmp_path / "none.jsonl")
    assert empty["ref_prof_factors"] == empty["ref_prof_overhead"] == NOT_RECORDED
