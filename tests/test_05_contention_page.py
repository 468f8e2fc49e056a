"""The contention benchmark's records, page and figure (episode 5), from made-up records: the
summaries, the page's values and words, the episode's section and the figure."""


import carpentry
import pytest
from conftest import ROOT
from contention_helpers import (
    ENVIRONMENT,
    made_records,
    made_up_conditions,
    made_up_records,
    made_up_report,
)

from gpulesson.experiments import registry
from gpulesson.experiments.contention import measure
from gpulesson.experiments.contention import page as contention
from gpulesson.records.figure_scripts import drawer
from gpulesson.records.results import NOT_RECORDED, append_record, validate_record

EPISODE = ROOT / "_episodes" / "05-cpu-vs-gpu.md"


# --- records ------------------------------------------------------------------------------------

def test_a_record_has_every_field_the_page_and_figure_need():
    alone, two, three, three_one = made_up_records()
    assert alone["slowdown"] == 1.0 and alone["mean_epoch_seconds"] == 10.0
    assert alone["images_per_second"] == 100.0 and alone["first_epoch_seconds"] == 12.0
    # Copy 1 took 20 s, copy 2 24 s after their first epochs (means): 22 s against 10 s alone.
    assert two["mean_epoch_seconds"] == pytest.approx(22.0)
    assert two["slowdown"] == pytest.approx(2.2)
    assert two["images_per_second_total"] == pytest.approx(1000 / 20 + 1000 / 24)
    assert two["start_spread_seconds"] == 1.0 and two["load_max"] == 4.1
    # Two of the three copies had a first epoch faster than their later ones.
    assert three["first_epoch_fastest"] == 2 and three["per_copy"][0]["first_epoch_fastest"]
    assert three_one["threads"] == 1 and three_one["slowdown"] == pytest.approx(1.5)
    for record in (alone, two, three, three_one):
        validate_record(record)
        assert record["cpu_model"] == "Test CPU" and record["run_id"] == alone["run_id"]
        # The fields that keep them apart from the former watched part's records in the file.
        assert record["part"] == "copies" and record["watched"] is None
    # The rule: every copy's epochs after its warm-up are the condition's samples, summarised.
    assert three["summary"]["samples"] == [39.0, 41.0, 44.0, 46.0, 34.0, 36.0]
    assert three["summary"]["warmup"] == [20.0, 30.0, 38.0] and three["summary"]["median"] == 40.0
    assert alone["summary"]["n"] == 2 and alone["summary"]["min"] == 9.0


def test_a_record_says_its_trainings_saw_no_gpu():
    condition = {**made_up_conditions()[0], "gpu_hidden": True,
                 "reports": [{**made_up_report(12.0, 10.0),
                              "devices_seen": {"device": "CPU", "gpu_count": 0}}]}
    record = measure.make_record(condition, run_id="r", n_images=1000, batch_size=100,
                                 epochs=2, environment={**ENVIRONMENT, "gpu_count": 1})
    assert record["gpu_hidden"] is True and record["gpus_seen"] == 0
    assert record["device"] == "CPU" and record["device_kind"] == "cpu"


def test_without_a_copy_alone_there_is_no_slowdown():
    records = made_records(made_up_conditions()[1:], run_id="r")
    assert all(r["slowdown"] is None for r in records)
    assert "-" in contention.describe(records)


def test_the_table_names_every_condition(contention_records):
    text = contention.describe(contention.reference_run(contention_records))
    assert "Test CPU" in text and "1 thread" in text and "2.20x" in text
    assert contention.describe([]) == "No run recorded."


# --- the page's values ------------------------------------------------------------------------

def test_page_values_come_from_the_newest_copies_run(contention_records):
    # The file's newest run is the former watched part's: the page reads the copies' run.
    assert contention.substitutions(contention_records)["ref_cont_alone_rate"] == "100 images/s"
    for record in made_up_records(run_id="20261123T110000Z-123456", factor=0.5):
        record["cpu_model"] = "Newer CPU"
        append_record(contention_records, record)
    values = contention.substitutions(contention_records)
    assert values["ref_cont_date"] == "2026-11-23"
    assert values["ref_cont_cpu"] == "Newer CPU, 2 cores"
    assert values["ref_cont_data"] == "synthetic stand-in (not CIFAR-10)"
    # One copy alone: 1,000 images in a median epoch of 10 s.
    assert values["ref_cont_alone_rate"] == "100 images/s"
    assert "1 thread per training" in values["ref_cont_fig_alt"]
    assert not [k for k, v in values.items() if NOT_RECORDED in v]


def test_a_run_made_before_summaries_were_kept_is_not_drawn(contention_records):
    """A newer run whose records keep no summary (made before they were kept) is passed over."""
    for record in made_up_records(run_id="20261123T120000Z-654321", factor=0.5):
        record.pop("summary")
        append_record(contention_records, record)
    values = contention.substitutions(contention_records)
    assert values["ref_cont_alone_rate"] == "100 images/s"  # the older run, with summaries
    assert "20261123T120000Z-654321" not in str(contention.reference_run(contention_records))


def test_a_missing_file_gives_not_recorded_values(tmp_path):
    values = contention.substitutions(tmp_path / "none.jsonl")
    assert values and all(v == NOT_RECORDED for v in values.values())


def _episode(values_from):
    values = {**carpentry.placeholder_values(ROOT), **contention.substitutions(values_from)}
    return carpentry.fill_placeholders(EPISODE.read_text(encoding="utf-8"), ROOT, values)


SECTION = "## Is your node shared? (optional)"


def values_alt_text_is_there(section, contention_records):
    """The figure's numbers reach the page in its alt text, drawn by the measuring code."""
    return f":alt: {contention.substitutions(contention_records)['ref_cont_fig_alt']}" in section


def test_the_episode_reads_well_without_the_records(tmp_path):
    filled = _episode(tmp_path / "none.jsonl")
    section = filled.split(SECTION)[1].split("\n## ")[0]
    assert "contention.svg" not in section and "copies of this CNN" not in section
    assert "cpu_settings()" in section and "set_cpu_threads()" in section  # what to do stays
    assert NOT_RECORDED not in section


def test_the_episode_shows_the_measurement_once_recorded(contention_records):
    filled = _episode(contention_records)
    section = filled.split(SECTION)[1].split("\n## ")[0]
    assert "contention.svg" in section and "trained at once on one machine" in section
    # The machine and the data are named: the section's runs are not the reference run's.
    assert "cores" in section.split("trained at once on one machine")[1].split("\n\n")[0]
    assert values_alt_text_is_there(section, contention_records)
    assert NOT_RECORDED not in section


# --- the figure ---------------------------------------------------------------------------------

def _figure_drawer():
    """What the figures step draws for the declared experiment (registry.draw_declared)."""
    experiment = registry.experiment("gpulesson.experiments.contention")
    return drawer(experiment, experiment.FIGURES, ROOT / contention.FIGURE_FOLDER,
                  until_recorded="contention")


def test_the_figure_draws_the_spread_and_says_what_it_draws(contention_records):
    import matplotlib.pyplot as plt

    records = contention.reference_run(contention_records)
    (fig,) = contention.figures(records)
    try:
        left = fig.axes[0]
        # One whisker per condition (common.draw_spread), and the epochs as dots.
        assert len(left.containers) == 2 and all(len(c.lines[2]) for c in left.containers)
        assert "whiskers: fastest to slowest epoch" in fig._suptitle.get_text()
        values = contention.substitutions(contention_records)
        assert fig.alt_text == values["ref_cont_fig_alt"]
        for text in ("10.0 s (range 9.0 s–11.0 s, 2 epochs)", "40.0 s (range 34.0 s–46.0 s, 6 epochs)",
                     "load 6.2", "1 thread per training", "fair share"):
            assert text in fig.alt_text, text
    finally:
        plt.close("all")
    # Without the one-thread conditions, the alt text does not speak of them.
    (fig,) = contention.figures([r for r in records if r["threads"] is None])
    assert "1 thread" not in fig.alt_text
    plt.close(fig)


def test_the_figures_step_draws_from_a_records_file(contention_records, tmp_path):
    written = _figure_drawer()(contention_records, tmp_path)
    assert [p.name for p in written] == ["contention.svg"]
    svg = written[0].read_text(encoding="utf-8")
    assert "trainings running at once" in svg and "1 thread" in svg


@pytest.mark.bad_input("missing file")
def test_the_figures_step_draws_nothing_before_a_run(tmp_path, capsys):
    assert _figure_drawer()(tmp_path / "none.jsonl", tmp_path) == []
    assert "holds no contention yet" in capsys.readouterr().out
    assert not list(tmp_path.glob("*.svg"))
    with pytest.raises(ValueError, match=r"python -m gpulesson.experiments.contention"):
        contention.figures([])



def test_series_differ_by_more_than_colour():
    import matplotlib.pyplot as plt
    from test_accessibility import problems

    figures = contention.figures(made_up_records())
    try:
        assert not [p for fig in figures for p in problems(fig)]
    finally:
        for fig in figures:
            plt.close(fig)
