"""The CNN's CPU-vs-GPU experiment follows the lesson's measurement rule
(gpulesson.records.summaries): a recorded warm-up epoch and the rule's timed epochs, a summary in
every record, page values as median and range, comparison words from ``compare`` only, figures
that show the spread, and alt texts written from what the figures draw."""

import copy
from types import SimpleNamespace

import matplotlib
import pytest
from test_reference import fake_run, record

from gpulesson.experiments import cnn
from gpulesson.experiments.cnn import measure, page
from gpulesson.machine.energy import Intervals
from gpulesson.records import summaries
from gpulesson.records.results import append_record

matplotlib.use("Agg")


RULE = summaries.WARMUP + summaries.REPEATS


def epochs(warmup, timed):
    return (warmup, *timed)


def run_file(tmp_path, cpu_timed, gpu_timed=None):
    """A results file with one made-up run: a CPU record and, if ``gpu_timed``, a GPU one."""
    path = tmp_path / "runs.jsonl"
    append_record(path, record("cpu:0", "r", epochs=epochs(9.0, cpu_timed)))
    if gpu_timed is not None:
        append_record(path, record("gpu:0", "r", epochs=epochs(4.0, gpu_timed)))
    return path


# --- the records ---------------------------------------------------------------------------------

def test_a_record_keeps_the_warmup_and_the_timed_epochs_with_their_summary():
    timed = (2.0, 2.4, 1.9, 2.2, 2.1)[:summaries.REPEATS]
    made = record("cpu:0", "r", epochs=epochs(7.0, timed))
    assert made["epoch_seconds"] == [7.0, *timed]  # every epoch, the warm-up first
    summary = made[summaries.SUMMARY_KEY]
    assert summary["n"] == summaries.REPEATS and summary["samples"] == list(timed)
    assert summary["warmup"] == [7.0] and summary["median"] == sorted(timed)[len(timed) // 2]
    assert page.epoch_summary(made) == summary


def test_the_load_average_before_and_after_is_kept_when_measured():
    batches = [SimpleNamespace(batch_size=256, n_images=n) for n in (900, 100, 200)]
    made = cnn.run_record(fake_run("cpu:0"), data="synthetic", run_id="r", batches=batches,
                          load_before=(0.5, 0.4, 0.3), load_after=(1.234, 1.0, 0.9))
    assert made["load_average_before"] == [0.5, 0.4, 0.3]
    assert made["load_average_after"] == [1.23, 1.0, 0.9]
    assert "load_average_before" not in record("cpu:0", "r")  # a notebook's record has none


def test_the_default_epochs_are_the_warmup_and_the_rules_repeats():
    assert measure.default_epochs(False) == RULE
    assert measure.default_epochs(True) == summaries.WARMUP + summaries.QUICK_REPEATS
    assert measure.check_epochs(summaries.WARMUP + 1) == summaries.WARMUP + 1


@pytest.mark.bad_input("bad argument")
def test_epochs_without_a_timed_one_are_refused():
    with pytest.raises(ValueError, match="warm-up"):
        measure.check_epochs(summaries.WARMUP)


@pytest.mark.parametrize("quick", [False, True])
def test_each_device_trains_the_warmup_and_the_rules_repeats(monkeypatch, quick):
    """train() with the training replaced by a stand-in that returns made-up epochs: it
    asks for the warm-up and the rule's repeats, and records them with their summary and the
    load average before and after."""
    from gpulesson import lesson
    from gpulesson.datasets import load as data

    asked = []

    model = SimpleNamespace(trainable_variables=[], evaluate=lambda data, verbose=0: [1.0, 0.5])

    def train_on(device, weights, train, validation, test, n_epochs, verbose=None, callbacks=()):
        asked.append(n_epochs)
        for callback in callbacks:
            callback.set_model(model)
        for epoch in range(n_epochs):  # the energy callback reads the meter around each epoch
            for callback in callbacks:
                callback.on_epoch_begin(epoch)
            for callback in callbacks:  # the validation pass
                callback.on_test_begin()
            for callback in callbacks:
                callback.on_test_end()
            for callback in callbacks:
                callback.on_epoch_end(epoch)
        return {**fake_run(device, epochs=tuple(3.0 - 0.1 * i for i in range(n_epochs))),
                "model": model}

    class Meter:  # 7 J between two readings, in 10 steps of the counter
        source, total, changes, counter, step_joules = "test counter", 0.0, 0, True, 0.7

        def reading(self):
            self.total += 7.0
            self.changes += 10
            return self.total, self.changes, 0.0

        def __exit__(self, *exc):
            pass

    monkeypatch.setattr(measure, "start_intervals", lambda kind: (Intervals(Meter()), None))

    batches = [SimpleNamespace(batch_size=64, n_images=n) for n in (900, 100, 200)]
    monkeypatch.setattr(lesson, "train_on", train_on)
    monkeypatch.setattr(lesson, "split_batches", lambda path, size: batches)
    monkeypatch.setattr(lesson, "build_cnn", lambda: SimpleNamespace(get_weights=lambda: []))
    monkeypatch.setattr(data, "prepare", lambda settings: "unused.h5")
    settings = SimpleNamespace(quick=quick, data="synthetic", batch_size=lambda size: size)
    made = list(measure.train(["cpu"], settings, epochs=None, batch_size=64, seed=1,
                               run_id="r"))
    repeats = summaries.repeats_for(quick)
    assert asked == [summaries.WARMUP + repeats]
    (cpu,) = made
    assert len(cpu["epoch_seconds"]) == summaries.WARMUP + repeats
    assert cpu["summary"]["n"] == repeats and len(cpu["summary"]["warmup"]) == summaries.WARMUP
    assert len(cpu["load_average_before"]) == 3 and len(cpu["load_average_after"]) == 3
    # the episode's timer waits before validation, its train_on times a warm evaluation
    assert cpu["validation_synchronised"] and cpu["evaluation_warmed"]
    energy = cpu["energy"]
    assert energy["measured"] and energy["source"] == "test counter" and energy["images"] == 900
    assert energy["summary"]["samples"] == [7.0] * repeats
    assert energy["summary"]["warmup"] == [7.0] * summaries.WARMUP


# --- old records ---------------------------------------------------------------------------------

def test_old_records_still_give_page_values(tmp_path):
    path = tmp_path / "old.jsonl"
    old = record("cpu:0", "r", epochs=(5.0, 2.0, 3.0))
    del old["summary"]  # made before the rule
    append_record(path, old)
    values = page.substitutions(path)
    assert values["ref_cpu_epoch"] == "2.5 s (range 2.0 s–3.0 s, 2 epochs)"
    assert values["ref_cpu_epoch_summary"] == values["ref_cpu_epoch"]
    assert values["ref_cpu_first_epoch"] == "5.0 s"


def test_the_committed_records_give_their_epochs_as_median_and_range():
    values = page.substitutions()
    summary = summaries.summary_of(cnn.reference_run()[0], warmup_key=None)
    assert values["ref_cpu_epoch"] == summaries.summary_text(summary, page.duration, what="epochs")
    assert "range" in values["ref_cpu_epoch"] or "no range" in values["ref_cpu_epoch"]


# --- comparison words ----------------------------------------------------------------------------

def test_overlapping_ranges_give_no_measurable_difference_on_the_page(tmp_path):
    path = run_file(tmp_path, (2.0, 2.4, 2.2), (2.3, 2.1, 2.5))
    values = page.substitutions(path)
    assert values["ref_gpu_vs_cpu"] == summaries.NO_DIFFERENCE
    assert summaries.NO_DIFFERENCE in values["ref_speedup"]
    assert "faster" not in values["ref_speedup"] + values["ref_fig_time_bars_alt"]
    assert "Speed-up" in cnn.describe(cnn.reference_run(path))
    assert summaries.NO_DIFFERENCE in cnn.describe(cnn.reference_run(path))


def test_separate_ranges_give_the_words_of_compare(tmp_path):
    path = run_file(tmp_path, (2.0, 2.4, 2.2), (0.5, 0.6, 0.55))
    values = page.substitutions(path)
    expected = summaries.compare(summaries.summarise([0.5, 0.6, 0.55]), summaries.summarise([2.0, 2.4, 2.2]))
    assert expected.measurable
    assert values["ref_gpu_vs_cpu"] == expected.sentence
    assert values["ref_speedup"] == f"{expected.ratio:.1f}×"


# --- figures and their alt texts -----------------------------------------------------------------

def _close(figs):
    import matplotlib.pyplot as plt

    for fig in figs:
        plt.close(fig)


def _legend(fig):
    return [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]


def test_cpu_only_figures_and_alt_texts_mention_no_gpu():
    records = [r for r in cnn.reference_run() if not page.is_gpu(r)]
    figs = cnn.figures(records)
    try:
        alts = page.alt_texts(records)
        assert [fig.alt_text for fig in figs] == list(alts)
        for alt in alts:
            assert "GPU" not in alt and "faster" not in alt and "speed-up" not in alt.lower()
        for fig in figs:
            assert _legend(fig) == ["CPU"]
        # The numbers of the alt text are those drawn: the median and range of the timed epochs.
        summary = page.epoch_summary(records[0])
        drawn = summaries.summary_text(summary, page.duration, what="epochs")
        assert drawn in alts[0] and drawn in alts[1]
    finally:
        _close(figs)


def test_cpu_and_gpu_figures_show_the_spread_and_their_alt_texts_say_what_is_drawn():
    cpu = copy.deepcopy(cnn.reference_run()[0])
    gpu = copy.deepcopy(cpu)
    timed = [0.31, 0.29, 0.30, 0.33, 0.28]
    gpu.update(device_kind="gpu", device="Made-up GPU", epoch_seconds=[3.0, *timed],
               evaluation_seconds=0.2, total_seconds=4.7, first_epoch_seconds=3.0,
               summary=summaries.summarise(timed, [3.0]))
    records = [cpu, gpu]
    epochs_fig, bars_fig = figs = cnn.figures(records)
    try:
        epochs_alt, bars_alt = page.alt_texts(records)
        assert (epochs_fig.alt_text, bars_fig.alt_text) == (epochs_alt, bars_alt)
        assert _legend(epochs_fig) == ["CPU", "GPU"] and _legend(bars_fig) == ["CPU", "GPU"]
        assert "Made-up GPU" in epochs_alt and "square markers" in epochs_alt
        gpu_text = summaries.summary_text(gpu["summary"], page.duration, what="epochs")
        assert gpu_text in epochs_alt and gpu_text in bars_alt
        words = summaries.compare(gpu["summary"], page.epoch_summary(cpu)).sentence
        assert f'labelled "{words}"' in bars_alt
        assert words in [t.get_text().split("\n")[-1] for t in bars_fig.axes[0].texts]
        # Every timed GPU epoch is drawn as a dot in both figures (the spread).
        for fig in figs:
            dots = [list(line.get_ydata()) for line in fig.axes[0].get_lines()
                    if line.get_marker() == "." and len(line.get_ydata()) == len(timed)]
            assert timed in dots
        # The GPU's epoch bar is its median.
        heights = sorted(p.get_height() for p in bars_fig.axes[0].patches)
        assert gpu["summary"]["median"] in heights
    finally:
        _close(figs)


def test_the_episode_takes_the_figures_alt_texts_from_the_drawing_code():
    from conftest import ROOT

    text = (ROOT / "_episodes" / "05-cpu-vs-gpu.md").read_text(encoding="utf-8")
    assert ":alt: {{ ref_fig_epoch_times_alt }}" in text
    assert ":alt: {{ ref_fig_time_bars_alt }}" in text
    values = page.substitutions()
    assert (values["ref_fig_epoch_times_alt"], values["ref_fig_time_bars_alt"]) == \
        page.alt_texts(cnn.reference_run())


def test_every_series_has_a_labelled_tick_at_or_below_it_and_the_bars_name_the_machines():
    """On a logarithmic axis of decades alone, a GPU's 0.5 s epochs and an 85 ms evaluation sat
    below the lowest label (1 s, 0.1 s): the ticks are at 1 and 3 times each power of ten and
    written as plain numbers, and the bars' title names both machines."""
    cpu = copy.deepcopy(cnn.reference_run()[0])
    gpu = copy.deepcopy(cpu)
    timed = [0.52, 0.51, 0.53, 0.52, 0.50]
    gpu.update(device_kind="gpu", device="Made-up GPU", epoch_seconds=[14.0, *timed],
               evaluation_seconds=0.0848, total_seconds=16.5, first_epoch_seconds=14.0,
               summary=summaries.summarise(timed, [14.0]))
    figs = cnn.figures([cpu, gpu])
    try:
        for fig, lowest in zip(figs, (min(timed), 0.0848), strict=True):
            ax = fig.axes[0]
            fig.canvas.draw()
            assert ax.get_yscale() == "log"
            bottom, top = ax.get_ylim()
            ticks = [t for t in ax.get_yticks() if bottom <= t <= top]
            labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
            assert min(ticks) <= lowest, (ticks, lowest)
            assert all("$" not in label for label in labels), labels  # 0.3, not 10^{-1}
        title = figs[1]._suptitle.get_text()
        assert "Made-up GPU" in title and "CPU: " in title
    finally:
        _close(figs)
