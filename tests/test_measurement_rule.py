"""The measurement rule (gpulesson.records.summaries): repeats, summaries, comparisons in words."""

import pytest

from gpulesson.records import summaries


def test_the_rule_is_five_repeats_after_one_warmup():
    assert summaries.REPEATS >= 5 and summaries.WARMUP == 1
    assert summaries.repeats_for(False) == summaries.REPEATS
    assert 1 <= summaries.repeats_for(True) < summaries.REPEATS


def test_summary_keeps_every_sample_and_the_warmup_apart():
    s = summaries.summarise([3.0, 1.0, 2.0, 5.0, 4.0], [9.0])
    assert s["median"] == 3.0 and s["min"] == 1.0 and s["max"] == 5.0 and s["n"] == 5
    assert s["samples"] == [3.0, 1.0, 2.0, 5.0, 4.0] and s["warmup"] == [9.0]


@pytest.mark.bad_input("bad argument")
def test_a_warmup_alone_is_no_measurement():
    with pytest.raises(ValueError, match="warm-up"):
        summaries.summarise([], [1.0])


def test_old_records_are_summarised_from_what_they_hold():
    kept = {"summary": summaries.summarise([1.0, 2.0])}
    assert summaries.summary_of(kept)["n"] == 2
    # Epoch times without a warm-up list: the first epoch is the warm-up.
    old = summaries.summary_of({"epoch_seconds": [26.5, 24.7, 24.6]})
    assert old["warmup"] == [26.5] and old["samples"] == [24.7, 24.6]
    # A warm-up list of its own: every epoch_seconds value is timed.
    feeding = summaries.summary_of({"warmup_seconds": [13.7], "epoch_seconds": [11.0]})
    assert feeding["n"] == 1 and feeding["warmup"] == [13.7]
    assert summaries.summary_of({"epoch_seconds": []}) is None
    assert summaries.summary_of({}) is None


def test_page_text_shows_the_median_and_the_range_or_says_there_is_none():
    assert summaries.summary_text(summaries.summarise([2.0, 1.0, 3.0])) == "2 s (range 1–3 s, 3 repeats)"
    assert "no range" in summaries.summary_text(summaries.summarise([2.0]))
    assert summaries.summary_text(None) == "not measured"


def test_rate_of_a_time_summary():
    rate = summaries.as_rate(summaries.summarise([1.0, 2.0, 4.0]), 100)
    assert rate["median"] == 50 and rate["min"] == 25 and rate["max"] == 100


def test_overlapping_ranges_are_no_measurable_difference():
    a = summaries.summarise([1.0, 1.2, 1.1])
    b = summaries.summarise([1.15, 1.3, 1.25])
    verdict = summaries.compare(a, b)
    assert not verdict.measurable and verdict.word == "about as fast as"
    assert verdict.sentence == summaries.NO_DIFFERENCE


def test_separate_ranges_are_faster_or_slower_with_their_size():
    fast, slow = summaries.summarise([1.0, 1.1, 1.05]), summaries.summarise([2.0, 2.2, 2.1])
    assert summaries.compare(fast, slow).text == "2× faster than"
    assert summaries.compare(slow, fast).text == "2× slower than"
    near = summaries.summarise([1.2, 1.25, 1.22])
    assert summaries.compare(fast, near).text == "faster than"
    # Rates: higher is better.
    assert summaries.compare(slow, fast, higher_is_better=True).word == "faster"


def test_a_single_repeat_is_never_ranked():
    one, other = summaries.summarise([1.0]), summaries.summarise([5.0])
    assert not summaries.compare(one, other).measurable


def test_ranking_puts_indistinguishable_conditions_in_one_place():
    found = {"ram": summaries.summarise([820, 830, 810]), "device": summaries.summarise([800, 825]),
             "hdf5": summaries.summarise([600, 610, 590]), "single": summaries.summarise([900])}
    places = summaries.rank(found, higher_is_better=True)
    assert places[0][0] == "single" and "ram" in places[0]  # one repeat ranks nowhere
    found.pop("single")
    places = summaries.rank(found, higher_is_better=True)
    assert places == [["ram", "device"], ["hdf5"]]


def test_draw_spread_draws_ranges_and_samples():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.bar([0, 1], [1, 2])
    summaries.draw_spread(ax, [0, 1], [summaries.summarise([0.9, 1, 1.1]), None])
    assert ax.collections  # the error bar
    assert len(ax.lines) >= 3  # whiskers' caps and the samples
    plt.close(fig)


def test_scale_multiplies_every_value_and_keeps_none():
    summary = summaries.summarise([2.0, 4.0, 3.0], [9.0])
    scaled = summaries.scale(summary, 10, "J")
    assert (scaled["median"], scaled["min"], scaled["max"]) == (30.0, 20.0, 40.0)
    assert scaled["samples"] == [20.0, 40.0, 30.0] and scaled["warmup"] == [90.0]
    assert scaled["unit"] == "J" and summaries.scale(summary, 2)["unit"] == "s"
    assert summary["median"] == 3.0 and summaries.scale(None, 2) is None


def test_one_stray_repeat_cannot_decide_a_comparison_of_the_middle_ones():
    # Five epochs of 0.34 s and one of them 1.675 s (a shutdown), against five of about 0.67 s.
    stray = summaries.summarise([0.352, 0.337, 0.34, 0.341, 1.675])
    slow = summaries.summarise([0.67, 0.734, 0.733, 0.672, 0.586])
    assert not summaries.compare(stray, slow).measurable  # the whole ranges overlap
    middle = summaries.middle(stray)
    assert (middle["min"], middle["max"], middle["median"]) == (0.34, 0.352, stray["median"])
    assert middle["samples"] == stray["samples"]  # every sample kept
    assert summaries.compare_middle(stray, slow).text == "2× faster than"
    # One stray fast epoch does not make a difference either.
    fast_once = summaries.summarise([0.67, 0.68, 0.66, 0.67, 0.1])
    assert not summaries.compare_middle(fast_once, slow).measurable
    # Fewer than five repeats keep their whole range.
    few = summaries.summarise([0.3, 0.5, 0.4])
    assert summaries.middle(few) == few and summaries.middle(None) is None
