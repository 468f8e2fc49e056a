"""Episode 9's generated words say what a reader can check: each verdict names the epochs it
compared, one ranking gives "the fastest pipeline" everywhere, an epoch timed in part is marked
as extrapolated, a profiled row keeps to one step, shares name their machines and round to the
nearest percent, every table names its data, and the settings' goal and the mixed-precision
answer come from the records. Made-up records only (tests only: never committed)."""


import pytest
from conftest import ROOT
from test_09_ceiling import JAX_GPU, gpu_run
from test_09_ceiling import record as ceiling_record

from gpulesson.experiments.ceiling import page as ceiling_page
from gpulesson.experiments.cnn import gpu_use
from gpulesson.experiments.feeding import measure, page
from gpulesson.experiments.profile import page as profile_page
from gpulesson.experiments.workers import page as workers_page
from gpulesson.machine import timing
from gpulesson.records import results
from gpulesson.records.results import append_record, make_record

EPISODE = (ROOT / "_episodes" / "09-feeding-the-gpu.md").read_text(encoding="utf-8")
LABEL = "synthetic stand-in (not CIFAR-10)"
CPU = {"date": "2026-11-24T00:00:00+00:00", "cpu_model": "Made-up EPYC", "cores_usable": 2,
       "cores_total": 2, "device": "CPU", "gpu_count": 0, "backend": "tensorflow",
       "versions": {"keras": "3.15.1", "tensorflow": "2.21.0"}}
GPU = {"date": "2026-11-27T16:00:00+00:00", "cpu_model": "Made-up Xeon", "cores_usable": 16,
       "cores_total": 16, "device": "NVIDIA H200", "gpu_count": 1, "backend": "jax",
       "gpu": {"name": "NVIDIA H200"}, "versions": {"keras": "3.15.1", "jax": "0.11.2"}}
BATCH, N = 256, 50_000


@pytest.fixture
def made(monkeypatch):
    """A maker of feeding records whose timed epochs give the ``rates`` (images/s), each with a
    warm-up, on a made-up machine (no framework asked)."""
    def make(pipeline, rates, *, device="cpu", mode="train", group="pipelines", steps=196,
             run_id="cpu-run", precision="float32", jit=True, spe=1):
        monkeypatch.setattr(results, "make_record", lambda experiment, data, environment, **fields:
                            make_record(experiment, data=data,
                                        environment=CPU if device == "cpu" else GPU, **fields))
        images = min(steps * BATCH, N)
        budget = timing.Budget(warmup=1, repeats=len(rates))
        budget.seconds += [2 * images / rates[0], *(images / r for r in rates)]
        made = measure.measurement_record(
            budget, run_id=run_id, device="cpu", pipeline=pipeline, mode=mode,
            batch_size=BATCH, steps=steps, full_steps=196, n_images=N,
            precision=precision if mode == "train" else None,
            jit_compile=jit if mode == "train" else None,
            steps_per_execution=spe if mode == "train" else None, group=group, extra={})
        if device == "gpu":
            made.update(device_kind="gpu", keras_device="gpu:0")
            made.pop("device")
            made.update(device=GPU["device"])
        return made
    return make


# Training rates shaped like the 2-core CPU's reference run: `lesson`'s middle epochs lie apart
# from `ram`'s, though all whole ranges overlap `lesson`'s.
CPU_RATES = {"classic": [295, 300, 302, 305, 365], "lesson": [288, 319, 459, 516, 528],
             "lesson-gzip": [277, 299, 326, 427, 438], "lesson-workers": [341, 352, 426, 483, 504],
             "ram": [297, 302, 305, 306, 371]}


def cpu_run(made, partial=False):
    return [made(p, rates, steps=12 if partial else 196) for p, rates in CPU_RATES.items()]


# Training rates shaped like the H200's reference run (lesson and ram), and a complete GPU part:
# every required pipeline trained and loaded alone.
GPU_RATES = {"lesson": [58_000, 75_000, 75_200, 75_900, 79_000],
             "ram": [146_000, 179_000, 180_800, 183_100, 183_200],
             "device": [100_000, 110_000, 116_000, 117_000, 118_000]}


def gpu_part(made):
    return [made(p, rates if mode == "train" else [3 * r for r in rates], device="gpu",
                 mode=mode, run_id="gpu-run")
            for p, rates in GPU_RATES.items() for mode in ("train", "loader")]


# --- 1. every verdict names the epochs it compared -------------------------------------------------

def test_a_comparison_names_the_middle_epochs_it_read(made):
    """`lesson` (middle three 319-516 images/s) against `ram` (302-306)."""
    records = cpu_run(made)
    assert page.versus("`a`", records[1], "`b`", records[4]) \
        == "`a` trained 1.5× faster than `b` (middle three of five epochs apart)"


def test_the_tables_name_the_epochs_their_verdicts_compare():
    """A share at or above the goal that is measurably slower says both, each true."""
    run = [ceiling_record("jax", "cpu", "ram", [0.50, 0.50, 0.51, 0.51, 0.52]),
           ceiling_record("jax", "cpu", "lesson", [0.54, 0.55, 0.555, 0.56, 0.57])]
    table = ceiling_page.table(run)
    assert "| Against the ceiling (middle three of five epochs) |" in table.splitlines()[0]
    assert "| 92% of it, measurably slower; meets the 90% goal |" in table
    from test_09_workers import RUN as WORKERS

    assert "| Against no worker (middle three of five epochs) |" in \
        workers_page.table(WORKERS).splitlines()[0]


# --- 2. one ranking gives the fastest pipeline ------------------------------------------------------

def test_the_table_the_alt_text_and_the_reading_name_the_same_fastest_pipelines(made):
    records = cpu_run(made)
    # the first place: `ram` is measurably slower
    quoted = "`lesson`, `lesson-workers` and `lesson-gzip` (no measurable difference from " \
             "`lesson`, the highest median; middle three of five epochs)"
    cell = next(line for line in page.table(records).splitlines()
                if line.startswith("| fastest pipeline |"))
    assert quoted in cell
    assert f"the fastest pipeline was {quoted}" in page.reading(records)
    assert quoted.replace("`", "") in page.pipelines_alt(records)
    # those measurably faster than `ram` are not said to show no difference from it
    reading = page.reading(records)
    assert reading.startswith("In the reference run, every comparison reads the middle three "
                              "of five epochs of each pipeline. ")
    assert ("Training from `lesson` and `lesson-workers` was measurably faster than from `ram` "
            "(`lesson` 1.5× faster, `lesson-workers` 1.4× faster)") in reading
    assert ("Training from `classic` and `lesson-gzip` showed no measurable difference from "
            "`ram`") in reading


# --- 3 and 5. peaks where the page asks to compare, and bfloat16 on CPUs from the records -----------

def _matmul(path, machine, run_id, seconds):
    """Made-up CPU sweeps of episode 6's products (float32 and bfloat16) at one size."""
    for dtype, calls in seconds.items():
        append_record(path, make_record(
            "matmul", data="random", environment={**CPU, "backend": "jax", **machine},
            run_id=run_id, device_kind="cpu", dtype=dtype, sizes=[4096],
            points=[{"n": 4096, "seconds": calls, "warmup_seconds": [1.0]}]))


def test_the_peaks_and_the_bfloat16_answer_come_from_the_records(made, tmp_path):
    # An old settings sweep's record stays in the file and out of the answer (the ladder's now).
    records = [*cpu_run(made), made("lesson", [294, 296, 468, 471, 472], group="precision",
                                    precision="mixed_bfloat16")]
    for r in records + gpu_part(made):
        append_record(tmp_path / "feeding.jsonl", r)
    _matmul(tmp_path / "matmul.jsonl", {"cpu_model": "Made-up Xeon", "cores_usable": 16},
            "mm", {"float32": [0.10, 0.10, 0.101, 0.102, 0.103],
                   "bfloat16": [0.04, 0.041, 0.042, 0.043, 0.044]})
    values = page.substitutions(tmp_path / "feeding.jsonl")
    assert values["ref_feed_peaks"].startswith("the NVIDIA H200's published dense peaks, 67 "
                                               "TFLOP/s in FP32, 494.5 in TF32 and 989.5 in BF16")
    assert "episode 6's peaks" not in EPISODE and "{{ ref_feed_peaks }}" in EPISODE


# --- 6. an epoch timed in part is marked as extrapolated --------------------------------------------

def test_an_epoch_timed_in_part_is_shown_as_extrapolated(made):
    records = cpu_run(made, partial=True)
    table = page.table(records)
    row = next(line for line in table.splitlines() if line.startswith("| one epoch, classic |"))
    assert row.startswith("| one epoch, classic | ≈ ") and "extrapolated from 12 of 196 steps" in row
    gpu = [made("lesson", [70_000, 74_000, 75_000, 76_000, 77_000], device="gpu", steps=12,
                run_id="gpu-run"),
           made("ram", [170_000, 178_000, 180_000, 182_000, 184_000], device="gpu",
                run_id="gpu-run")]
    said = page.findings(gpu)
    assert "One epoch of 50,000 images would take **≈ 667 ms (extrapolated from 12 of 196 " \
           "steps)**" in said
    assert "(median; from `ram`: 278 ms)" in said  # a whole epoch timed: no mark


# --- 7. one profiled row, one step -------------------------------------------------------------------

def test_a_profiled_row_gives_the_rate_of_its_own_step():
    from test_09_profile import made_record

    record = made_record("cpu", step=0.710, host={"input": 0.003, "dispatch": 0.002,
                                                   "other": 0.563},
                         dev={"kernels": 0.556, "copies": 0.0, "idle": 0.012})
    record["profile"]["step"] = 0.568  # the profiled steps ran faster than the timed epochs'
    row = profile_page.rows([record])[0]
    assert row[1] == "568 ms"
    assert row[-2] == f"{3 * 31e6 * 256 / 0.568 / 1e12:.3g}"  # not the epochs' rate
    assert row[-2] != f"{record['achieved_tflops']:.3g}"


# --- 8. shares name their machines and round to the nearest percent ---------------------------------

def test_the_shares_name_each_devices_machine_and_round_to_the_nearest():
    run = ([ceiling_record("jax", "cpu", name, seconds) for name, seconds in
            (("ram", [0.5] * 5), ("lesson", [0.81] * 5))]
           + gpu_run("jax", JAX_GPU))
    said = ceiling_page.goal_shares(run)
    assert "On the CPU (Test CPU, 2 cores, 2026-11-23): 62% on JAX." in said
    assert ("On the GPU (Made-up GPU beside Made-up Xeon, 16 cores, 2026-11-27): 62% on JAX."
            in said)  # 0.617 of the ceiling, not 61 %


# --- 9. every table of results names its data -------------------------------------------------------

def test_each_table_on_the_page_names_its_data():
    for key in ("ref_ceil_data", "ref_workers_data", "ref_feed_data", "ref_prof_data"):
        assert f"{{{{ {key} }}}}" in EPISODE, key
    assert "on\nthe synthetic stand-in, 50,000" not in EPISODE
    assert ceiling_page.substitutions()["ref_ceil_data"] == LABEL
    assert workers_page.substitutions()["ref_workers_data"] == LABEL
    assert page.substitutions()["ref_feed_data"] == LABEL


# --- 10. episode 5's run of the same model beside this one ------------------------------------------

def test_episode_5s_rate_on_the_same_gpu_is_set_beside_the_generators(made, tmp_path):
    gpu = [dict(r) for r in gpu_part(made)]  # copies: the test changes them
    for r in gpu:
        append_record(tmp_path / "feeding.jsonl", r)
    ep5 = append_record(tmp_path / "cnn-cpu-vs-gpu.jsonl", make_record(
        "cnn-cpu-vs-gpu", data="synthetic", environment=GPU, run_id="ep5", device_kind="gpu",
        batch_size=BATCH, n_train=45_000,
        epoch_seconds=[9.8, 0.436, 0.386, 0.328, 0.324, 0.321]))
    assert "Episode 5" not in page.substitutions(tmp_path / "feeding.jsonl")["ref_feed_findings"]
    said = gpu_use.feeding_note(ep5)  # episode 5's values, shown on this page
    assert ("Episode 5's run of the same model and generator on the same hardware (JAX, batch "
            "256, run ep5) measured 137,195 images/s (epochs of 45,000 images, median 328 ms): "
            "1.8× faster than `lesson` here (middle three of five epochs apart). Both kept the "
            "generator's order") in said
    # made before the experiments kept the generator's order, and episode 5's epochs with a
    # validation pass: the known differences named
    append_record(ep5, {**results.read_records(ep5)[0], "run_id": "ep5v", "validation_synchronised": True,
                        "validation_seconds": [3.1, 0.05, 0.045, 0.04, 0.044, 0.046]})
    for r in gpu:
        r.pop("fit_shuffle")
    (tmp_path / "feeding.jsonl").unlink()
    for r in gpu:
        append_record(tmp_path / "feeding.jsonl", r)
    assert ("This run's `fit` reordered the generator's batches, episode 5's did not. Only "
            "episode 5's epochs include a validation pass (median 45 ms).") in gpu_use.feeding_note(ep5)
    said = page.substitutions(tmp_path / "feeding.jsonl")
    assert said["ref_feed_order"].startswith(f"In run {gpu[0]['run_id']}, `fit` reordered")
    # without the feeding benchmark's records beside episode 5's, nothing is said
    (tmp_path / "feeding.jsonl").unlink()
    assert gpu_use.feeding_note(ep5) == ""
    assert "{{ ref_feed_findings }} {{ ref_use_feeding }}" in EPISODE
