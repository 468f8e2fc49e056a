"""The input-pipeline benchmark's page (episode 9): the table, findings and goals from made-up
GPU records, the figures, the alt texts, and the committed results, on the CPU at tiny sizes."""

import copy

import pytest
from conftest import ROOT
from feeding_helpers import BATCH, REPEATS, N, write_records

from gpulesson.experiments import feeding, registry
from gpulesson.experiments.feeding import measure, page
from gpulesson.machine import timing
from gpulesson.records import summaries
from gpulesson.records.results import NOT_RECORDED, read_records


def _draw(folder, results, name=feeding.__name__):
    """The figures as `make figures` draws them."""
    return registry.figure_drawer(name, folder)(results)



# --- the page's numbers and the goals ---------------------------------------------------------------

def _with_rates(record, rate, spread=0.05, n=summaries.REPEATS):
    """``record`` with made-up timed epochs whose rates lie within ``spread`` of ``rate``."""
    images = record["images_per_epoch"]
    factors = [1 + spread * (2 * i / (n - 1) - 1) for i in range(n)] if n > 1 else [1.0]
    seconds = [images / (rate * f) for f in factors]
    summary = summaries.summarise(seconds, [2 * seconds[0]])
    record.update(epoch_seconds=seconds, warmup_seconds=summary["warmup"], repeats=n,
                  images_per_second=images / summary["median"],
                  full_epoch_seconds=record["n_images"] * summary["median"] / images,
                  **{summaries.SUMMARY_KEY: summary})
    return record


def _as_gpu(records, rates):
    """Made-up GPU copies of CPU records (tests only: never committed)."""
    made = []
    for r in records:
        g = copy.deepcopy(r)
        g.update(device_kind="gpu", keras_device="gpu:0", device="Made-up GPU 80GB",
                 n_images=50_000, images_per_epoch=50_000, other_programs_cpu_share=0.0)
        made.append(_with_rates(g, rates.get(r["pipeline"], 1000.0)))
    return made


def test_without_gpu_records_the_values_show_the_cpu_alone(feeding_measured, tmp_path):
    """The episode's note says once what is missing (test_missing_values): the values say
    nothing of the GPU."""
    records, _, _ = feeding_measured
    path = write_records(tmp_path / "cpu.jsonl", records)
    values = page.substitutions(path)
    assert all(k.startswith("ref_feed_") for k in values)
    table, findings = values["ref_feed_table"], values["ref_feed_findings"]
    # a column for the CPU only, and a row for every pipeline it measured
    assert table.splitlines()[0].startswith("| pipeline | CPU: ") and "GPU" not in table
    for pipeline in measure.PIPELINES:
        assert page.ROWS[pipeline] in table
    page_text = table + findings + values["ref_feed_reading"]
    assert NOT_RECORDED not in page_text and "not measured" not in table
    assert "GPU" not in page_text and "recorded yet" not in page_text
    assert measure.targets(records) is None
    empty = page.substitutions(tmp_path / "none.jsonl")
    assert empty.keys() == values.keys()
    assert empty["ref_feed_table"].startswith("No reference run has been recorded yet")
    assert empty["ref_feed_reading"] == "No reference run has been recorded yet."


def test_the_committed_results_give_no_gpu_number_unless_measured():
    values = page.substitutions()
    if not any(r.get("device_kind") == "gpu" for r in read_records(feeding.RESULTS_FILE)):
        assert values["ref_feed_gpu"] == NOT_RECORDED and "GPU" not in values["ref_feed_table"]
        assert "GPU" not in values["ref_feed_findings"] + values["ref_feed_reading"]
    assert values["ref_feed_table"].count("|") > 10


def test_the_goals_are_checked_on_gpu_records(feeding_measured, tmp_path):
    records, _, _ = feeding_measured
    base = [r for r in records if r["group"] == "pipelines"]
    good = _as_gpu(base, {"lesson": 60_000.0, "lesson-workers": 95_000.0,
                          "device": 100_000.0, "classic": 2_000.0})
    checks = measure.targets(good)
    assert checks["pipeline"] == "lesson-workers" and checks["share"] == pytest.approx(0.95)
    assert checks["share_ok"] and checks["epoch_ok"] and checks["full_size"]
    assert checks["epoch_seconds"] == pytest.approx(50_000 / 95_000)
    slow = _as_gpu(base, {p: 20_000.0 for p in measure.HDF5_PIPELINES} | {"device": 40_000.0})
    checks = measure.targets(slow)
    assert checks["share"] == pytest.approx(0.5) and not checks["share_ok"]
    assert not checks["epoch_ok"]  # 2.5 s an epoch

    path = write_records(tmp_path / "both.jsonl", base + good)
    values = page.substitutions(path)
    assert values["ref_feed_gpu"] == "Made-up GPU 80GB"
    assert "| GPU: Made-up GPU 80GB (TensorFlow), training |" in \
        values["ref_feed_table"].splitlines()[0]
    assert "| 100,000 (range 95,000–105,000, 5 repeats) |" in values["ref_feed_table"]
    findings = values["ref_feed_findings"]
    assert "**95%**" in findings and "trained 48× slower than" in findings
    assert "met" in findings and "not met" not in findings
    assert "recorded yet" not in findings + values["ref_feed_table"]


def test_worker_records_on_jax_and_torch_are_never_shown(feeding_measured, tmp_path):
    """Keras workers deliver batches of earlier epochs with JAX and PyTorch: such records (of
    runs from before the command refused them) stay in the file, but nothing presents them."""
    records, _, _ = feeding_measured
    base = [r for r in records if r["group"] == "pipelines"]
    on_jax = copy.deepcopy(base)
    for r in on_jax:
        r["backend"] = "jax"
        if r["pipeline"] in measure.WORKER_PIPELINES:
            r["images_per_second"] *= 1000  # the fastest, were it shown
    wrong = [r for r in on_jax if measure.delivered_wrong_data(r)]
    assert {r["pipeline"] for r in wrong} == set(measure.WORKER_PIPELINES)
    assert not any(measure.delivered_wrong_data(r) for r in base)  # TensorFlow: right data
    assert feeding.best_pipeline(on_jax, "cpu") not in measure.WORKER_PIPELINES
    assert measure.find(on_jax, "cpu", "lesson-workers") is None
    path = write_records(tmp_path / "jax.jsonl", on_jax)
    values = page.substitutions(path)
    assert page.ROWS["lesson-workers"] not in values["ref_feed_table"]
    svg = _draw(tmp_path / "fig", path)[0].read_text()
    assert "uncompressed, worker processes" not in svg  # no row for it
    assert len(read_records(path)) == len(on_jax)  # nothing deleted


def test_the_figures_draw_made_up_gpu_records(feeding_measured, tmp_path):
    records, _, _ = feeding_measured
    base = [r for r in records if r["group"] == "pipelines"]
    gpu = _as_gpu(records, {"device": 100_000.0})
    path = write_records(tmp_path / "made-up.jsonl", records + gpu)
    written = _draw(tmp_path / "fig", path)
    assert [p.name for p in written] == ["feeding-pipelines.svg"]
    pipelines = written[0].read_text()
    assert "Made-up GPU 80GB" in pipelines and "synthetic stand-in" in pipelines
    assert f"GPU: {NOT_RECORDED}" not in pipelines
    # without GPU records the figures draw and name no GPU
    cpu_only = _draw(tmp_path / "cpu", write_records(tmp_path / "cpu.jsonl", base))
    assert len(cpu_only) == 1 and "GPU" not in cpu_only[0].read_text()
    assert _draw(tmp_path / "none", tmp_path / "missing.jsonl") == []  # no run: nothing drawn


# --- the rule's words on the page and in the figures ----------------------------------------------

COMMITTED = ROOT / "results" / "feeding.jsonl"


def test_the_committed_reference_run_follows_the_rule():
    records = feeding.reference_run(COMMITTED)
    assert records and all(summaries.SUMMARY_KEY in r for r in records)
    assert all(len(r["warmup_seconds"]) == summaries.WARMUP and r["repeats"] >= summaries.REPEATS
               for r in records)


def test_the_committed_records_made_before_the_rule_still_give_the_page_its_values(tmp_path):
    """One timed epoch per training condition: medians with "1 repeat", and no ranking, where
    the page once ranked device-resident data (607 images/s) and RAM (572) below the HDF5
    generator (823), and called XLA off (1,472) faster than on (823). The newest run made
    before the rule stays in the results file; the page is built from its pipelines alone here
    (its settings sweep is kept in the file, not shown: the settings are the speed ladder's)."""
    old_runs = [run for run in measure.RECORDS.runs(read_records(COMMITTED)).values()
                if all(summaries.SUMMARY_KEY not in r for r in run)]
    assert old_runs, "the results file keeps the runs made before the rule"
    old = write_records(tmp_path / "before-the-rule.jsonl", old_runs[-1])
    records = feeding.reference_run(old)
    assert records == [r for r in old_runs[-1] if r["group"] == "pipelines"]
    values = page.substitutions(old)
    text = values["ref_feed_table"] + values["ref_feed_findings"] + values["ref_feed_reading"]
    if all(measure.RECORDS.epoch_summary(r)["n"] == 1 for r in records if r["mode"] == "train"):
        assert "1 repeat, no range" in values["ref_feed_table"]
        for word in ("faster", "slower", "×", "made the model wait", "set the pace"):
            assert word not in text, word
        fastest = measure.fastest_text(records, "cpu")
        assert summaries.NO_DIFFERENCE in fastest
        assert all(f"`{p}`" in fastest for p in ("lesson", "ram"))
        # its device-resident data were eager slices, a method the page no longer shows
        assert "`device`" not in fastest
        assert "XLA" not in values["ref_feed_findings"]


def _pair(tmp_path, lesson_rate, ram_rate, *, n=summaries.REPEATS, spread=0.1):
    """Two made-up CPU training records of one run, with rates around the given ones."""
    budget = timing.Budget(warmup=1, repeats=1)
    budget.seconds += [2.0, 1.0]
    made = []
    for pipeline, rate in (("lesson", lesson_rate), ("ram", ram_rate)):
        r = measure.measurement_record(
            budget, run_id="made-up", device="cpu", pipeline=pipeline, mode="train",
            batch_size=BATCH, steps=3, full_steps=3, n_images=N, precision="float32",
            jit_compile=True, steps_per_execution=1, group="pipelines", extra={})
        made.append(_with_rates(r, rate, spread, n))
    return made


@pytest.mark.parametrize("lesson, ram, n, expected", [
    (1000.0, 1050.0, 5, "overlap"),  # ranges of ±10 % overlap
    (1000.0, 3000.0, 1, "once"),  # far apart, but one epoch each: no range
    (1000.0, 3000.0, 5, "apart"),
])
def test_the_page_ranks_pipelines_only_where_their_ranges_are_apart(tmp_path, lesson, ram, n,
                                                                     expected):
    records = _pair(tmp_path, lesson, ram, n=n)
    fastest = measure.fastest_text(records, "cpu")
    clause = page.versus("`ram`", records[1], "`lesson`", records[0])
    if expected == "apart":
        assert fastest == "`ram`"
        assert clause == ("`ram` trained 3× faster than `lesson` (middle three of five epochs "
                          "apart)")
    else:
        assert fastest.startswith(f"`ram` and `lesson` ({summaries.NO_DIFFERENCE} from `ram`, "
                                  "the highest median; ")
        assert summaries.NO_DIFFERENCE in clause and "faster" not in clause
        assert ("middle three of five epochs overlap" in clause) == (expected == "overlap")
        assert ("timed once" in clause) == (expected == "once")
        assert ("timed once" in fastest) == (expected == "once")
    # the choice of a best pipeline is the highest median either way
    assert feeding.best_pipeline(records, "cpu") == "ram"


def test_the_loader_is_said_to_keep_ahead_only_where_the_rule_can_tell(feeding_measured):
    records, _, _ = feeding_measured
    train = copy.deepcopy(measure.find(records, "cpu", "lesson"))
    loader = copy.deepcopy(measure.find(records, "cpu", "lesson", "loader"))
    top = _with_rates(copy.deepcopy(measure.find(records, "cpu", "ram")), 1000.0)
    # training measurably slower than from memory: the loader alone 1.5 times ahead or not
    for rate, verdict in ((1000.0, "adds"), (110.0, "waiting"), (150.0, "waiting")):
        said = page.input_verdict(_with_rates(train, 100.0), _with_rates(loader, rate), top)
        assert said == verdict, rate
    assert page.input_verdict(_with_rates(train, 100.0), None, top) == "waiting"
    assert page.input_verdict(_with_rates(train, 100.0, n=1), loader, top) == "unclear"


def test_alt_texts_name_what_is_drawn(feeding_measured, tmp_path):
    records, _, _ = feeding_measured
    cpu_alt = (page.pipelines_alt(records),)
    assert all("GPU" not in text for text in cpu_alt), cpu_alt
    assert "the CPU (" in cpu_alt[0] and "one panel for the CPU" in cpu_alt[0]
    for pipeline in measure.PIPELINES:
        assert pipeline in cpu_alt[0]
    assert f"{REPEATS} for training" in cpu_alt[0]
    assert len(cpu_alt) == 1  # one figure: the settings are the speed ladder's
    gpu = _as_gpu([r for r in records if r["group"] == "pipelines"], {"device": 100_000.0})
    both = (page.pipelines_alt(records + gpu),)
    assert "the CPU (" in both[0] and "the GPU (Made-up GPU 80GB)" in both[0]
    assert "GPU training medians: from 1,000 images/s" in both[0]
    assert "to 100,000 images/s (device); fastest by the lesson's rule: device." in both[0]
    path = write_records(tmp_path / "both.jsonl", records + gpu)
    values = page.substitutions(path)
    assert (values["ref_feed_fig_pipelines_alt"],) == both


def test_the_episode_takes_its_alt_texts_from_the_page():
    episode = (ROOT / "_episodes" / "09-feeding-the-gpu.md").read_text(encoding="utf-8")
    for key in [key for key in page.substitutions() if key.endswith("_alt")]:
        assert f":alt: {{{{ {key} }}}}" in episode, key


# --- partial runs and the verdicts on GPU records shaped like the H200's -------------------------

# Training and loader-alone images/s shaped like the H200 run's (tests only: never committed).
H200_TRAIN = {"classic": 883.0, "lesson": 75_187.0, "lesson-gzip": 9_757.0, "ram": 180_828.0,
              "device": 116_871.0}
H200_LOADER = {"classic": 862.0, "lesson": 232_643.0, "lesson-gzip": 35_821.0,
               "ram": 471_643.0, "device": 506_453.0}


def _gpu_run(records, run_id, train=H200_TRAIN, loader=H200_LOADER, groups=("pipelines",)):
    """Made-up GPU records of one run: the CPU records' pipelines that ``train`` names, with
    these rates (tests only)."""
    made = []
    for r in records:
        if r["pipeline"] not in train or r["group"] not in groups:
            continue
        g = copy.deepcopy(r)
        g.update(device_kind="gpu", keras_device="gpu:0", device="Made-up H200", run_id=run_id,
                 cpu_model="Made-up Xeon", cores_usable=16, n_images=50_000,
                 images_per_epoch=50_000, backend="jax", date="2026-11-27T16:00:00+00:00")
        rates = loader if g["mode"] == "loader" else train
        made.append(_with_rates(g, rates[g["pipeline"]]))
    return made


def test_a_partial_gpu_run_never_breaks_the_page(feeding_measured, tmp_path):
    """A GPU-only run, a newer GPU run with an old settings sweep's records, and a GPU run
    stopped before its last pipelines: the CPU's complete run stays the CPU's reference, the
    newest complete GPU part is the GPU's without the sweep's records (kept in the file, never
    shown: the settings are the speed ladder's), and every value, the exercise's call and the
    figure work."""
    records, _, _ = feeding_measured
    cpu_run = records[0]["run_id"]
    gpu = _gpu_run(records, "gpu-complete")
    newer = _gpu_run(records, "gpu-newer")
    swept = [{**r, "group": "precision", "precision": "mixed_bfloat16"}
             for r in newer if r["pipeline"] == "ram" and r["mode"] == "train"]
    stopped = [r for r in _gpu_run(records, "gpu-stopped") if r["pipeline"] in ("classic", "lesson")]
    path = write_records(tmp_path / "partial.jsonl", records + gpu + newer + swept + stopped)
    reference = feeding.reference_run(path)
    assert {(r["device_kind"], r["run_id"]) for r in reference} == {
        ("cpu", cpu_run), ("gpu", "gpu-newer")}
    assert {r["group"] for r in reference} == {"pipelines"}
    assert not measure.complete_pipelines(stopped)
    assert feeding.best_pipeline(reference, "cpu") is not None
    assert feeding.best_pipeline(reference, "gpu") == "ram"
    values = page.substitutions(path)
    said = {k: v for k, v in values.items() if not k.endswith("_alt")}
    assert not any(NOT_RECORDED in v for v in said.values()), said
    assert "mixed_bfloat16" not in values["ref_feed_findings"]
    assert f"run {cpu_run} (" in values["ref_feed_when"]
    assert "GPU: Made-up H200 beside Made-up Xeon, 16 cores; Keras" in values["ref_feed_when"]
    assert "run gpu-newer (2026-11-27)" in values["ref_feed_when"]
    assert "gpu-stopped" not in "".join(values.values())
    text = feeding.describe(reference)
    assert cpu_run in text and "gpu-newer" in text
    written = _draw(tmp_path / "fig", path)
    assert [p.name for p in written] == ["feeding-pipelines.svg"]
    assert "run gpu-newer" in written[0].read_text()


def test_the_streams_goals_are_met_not_met_or_not_recorded(feeding_measured, tmp_path):
    """On the GPU, `lesson-ahead` against `ram` (180,828 images/s) with the CNN; on a CPU,
    `lesson-ahead` against `lesson` in every run of the file that trained both, in the order
    they ran; where either is missing, the command that records it."""
    records, _, _ = feeding_measured
    cpu_run = records[0]["run_id"]
    for rate, share, verdict in ((170_000.0, "94%", "met"), (100_000.0, "55%", "not met")):
        gpu = _gpu_run(records, "g", train={**H200_TRAIN, "lesson-ahead": rate},
                       loader={**H200_LOADER, "lesson-ahead": 3 * rate})
        path = write_records(tmp_path / f"{verdict}.jsonl", records + gpu)
        said = page.stream_goals(feeding.reference_run(path), path)
        assert "at least 90% of `ram` (a PyDataset from RAM; the ladder measures against" in said
        assert f"{BATCH} in float32: {share} in run g ({verdict})." in said
        assert f"Run {cpu_run} (`lesson` first, others using " in said
    # On a CPU: measurably slower is not met; no measurable difference is; runs that disagree
    # give no verdict.
    pair = {p: measure.find(records, "cpu", p) for p in ("lesson", "lesson-ahead")}
    made = []
    for ahead, verdict, busy in ((50.0, "not met", 0.7), (98.0, "met", 0.6)):
        made += [{**_with_rates(copy.deepcopy(pair[p]), rate), "run_id": verdict,
                  "other_programs_cpu_share": busy}
                 for p, rate in (("lesson", 100.0), ("lesson-ahead", ahead))]
        said = page.stream_goals([], write_records(tmp_path / f"cpu-{ahead}.jsonl", made[-2:]))
        assert f", {verdict} (middle three of five epochs)." in said and "disagree" not in said
        assert ("2× slower" in said) == (verdict == "not met") != (summaries.NO_DIFFERENCE in said)
    said = page.stream_goals([], write_records(tmp_path / "cpu-both.jsonl", made))
    assert said.endswith("others using 60% of the CPU): no measurable difference, met (middle three "
                         "of five epochs). The runs, on a shared machine, disagree: no verdict.")
    nothing = page.stream_goals([], tmp_path / "none.jsonl")
    assert nothing.count("has not been recorded yet") == 2
    assert "--devices cpu --pipelines lesson lesson-ahead` records it" in nothing


def test_the_goal_and_the_reading_follow_training_from_memory_on_a_gpu(feeding_measured):
    """On records shaped like the H200's: the 90 % goal against the fastest path from memory
    (RAM, not the slower device-resident path), and the loader's margin overruled where
    training from memory is measurably faster: reading adds to each step."""
    records, _, _ = feeding_measured
    gpu = _gpu_run(records, "gpu")
    checks = measure.targets(gpu)
    assert checks["reference"] == "ram" and checks["pipeline"] == "lesson"
    assert checks["share"] == pytest.approx(75_187 / 180_828) and not checks["share_ok"]
    top = measure.fastest_in_memory(gpu, "gpu")
    lesson, lesson_loader = measure.find(gpu, "gpu", "lesson"), measure.find(gpu, "gpu", "lesson", "loader")
    assert page.input_verdict(lesson, lesson_loader, top) == "adds"  # the margin alone: no wait
    classic = measure.find(gpu, "gpu", "classic")
    assert page.input_verdict(classic, measure.find(gpu, "gpu", "classic", "loader"), top) == "waiting"
    close = _with_rates(copy.deepcopy(lesson), 178_000.0)
    assert page.input_verdict(close, lesson_loader, top) == "keeps up"
    reading = page.reading(gpu)
    assert "`lesson` 2.4× slower, `lesson-gzip` 19× slower" in reading
    assert "reading did not overlap the steps" in reading and "`lesson-ahead` read ahead" not in reading
    ahead = page.reading(_gpu_run(records, "gpu", train={**H200_TRAIN, "lesson-ahead": 90_000.0},
                                  loader={**H200_LOADER, "lesson-ahead": 270_000.0}))
    assert "`lesson-ahead` read ahead, yet trained at only 50% of `ram`'s rate: the records" in ahead
    assert "the model set the pace" not in reading
    findings = page.findings(gpu)
    assert "**42%** of the rate of `ram`" in findings and "(not met)" in findings  # 41.6 %
    # Where the device-resident path is the fastest from memory, it is the reference.
    faster = _gpu_run(records, "gpu", train={**H200_TRAIN, "device": 200_000.0})
    assert measure.targets(faster)["reference"] == "device"
