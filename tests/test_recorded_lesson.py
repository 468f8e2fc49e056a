"""The lesson's own recorded run (executed/), whose outputs the site shows under each code cell.

Every episode with code has a record, made full size with tools/record_run.py; none is stale
(a code cell changed since the run: the test names the notebook and the command that refreshes
it); together they stay small; the CNN episode's outputs teach (accuracy of a model that still
makes mistakes); and the recorded timings agree with the reference results recorded on the same
machine (``make reference`` records both, one after the other). The rendered pages are checked in
a real browser by tests/test_browser.py.
"""

import ast
import json
import re
import statistics
from pathlib import Path

import clean_outputs
import make_notebooks as mk
import record_run
import recorded
from conftest import ROOT

# The CNN episode's accuracy after the workshop's epochs must leave mistakes to discuss, as
# CIFAR-10 does (the stand-in is calibrated for it: results/standin-calibration.jsonl).
TEACHING_ACCURACY = (0.45, 0.70)
# A recorded epoch and the reference results of the same machine agree within this factor:
# both are single runs on a shared machine, so a few tens of percent is noise, not a mistake.
TIMING_FACTOR = 1.5


def records() -> dict:
    return {path.stem: recorded.read_record(path)
            for path in sorted((ROOT / recorded.EXECUTED_DIR).glob("*.ipynb"))}

def has_colours(output: dict) -> bool:
    """Whether an output still carries terminal colours: an ANSI escape or Rich's coloured HTML."""
    def text(value) -> str:
        return "".join(value) if isinstance(value, list) else value

    texts = [text(output.get("text", "")), *output.get("traceback", [])]
    texts += [text(v) for k, v in output.get("data", {}).items() if k.startswith("text/")]
    return any("\x1b" in t for t in texts) or clean_outputs.is_rich_html(output.get("data", {}))


def streams(nb) -> str:
    return "".join(output.get("text", "") for cell in nb.cells if cell.cell_type == "code"
                   for output in cell.outputs if output.output_type == "stream")


def test_repeated_sources_get_their_own_outputs_in_order():
    nb = {"cells": [{"cell_type": "code", "source": "x", "outputs": [1]},
                    {"cell_type": "code", "source": "x\n", "outputs": [2]},
                    {"cell_type": "code", "source": "y", "outputs": [3]}]}
    assert recorded.match_cells(["x", "x", "z"], nb) == [[1], [2], None]
    assert record_run.stale_cells(["x", "x", "z"], nb) == ["changed or new cell: 'z'",
                                                "1 recorded cell(s) no longer in the episode"]


def test_the_lessons_records_match_their_episodes():
    """Fails when a code cell of an episode changed since the recorded run, naming the notebook
    and the command that refreshes it."""
    problems = record_run.stale_records(ROOT)
    assert not problems, "\n".join(problems)


def test_the_lessons_records_carry_no_terminal_colours():
    """No recorded output keeps an ANSI escape or Rich's coloured HTML, whose colours fail
    contrast on the page (clean them with 'python tools/record_run.py --clean-only')."""
    coloured = [f"{path.name}: cell {index}"
                for path in sorted((ROOT / recorded.EXECUTED_DIR).glob("*.ipynb"))
                for index, cell in enumerate(json.loads(path.read_text(encoding="utf-8"))["cells"])
                if any(has_colours(output) for output in cell.get("outputs", []))]
    assert not coloured, "outputs with terminal colours: " + ", ".join(coloured)


def test_every_episode_with_code_has_a_full_size_record():
    missing = [ep.stem for ep in mk.notebook_episodes(ROOT) if record_run.code_sources(ep)
               and not (ROOT / recorded.EXECUTED_DIR / f"{ep.stem}.ipynb").exists()]
    assert not missing, ("no recorded run of " + ", ".join(missing) + " (their pages show code "
                         "without outputs); record the run on a quiet machine: LESSON_DATA=cifar10 "
                         "make executed (LESSON_DATA=synthetic where CIFAR-10 cannot be had)")
    episodes = {ep.stem for ep in mk.notebook_episodes(ROOT)}
    runs = {slug: nb.metadata[recorded.METADATA_KEY] for slug, nb in records().items()}
    assert set(runs) <= episodes
    for slug, run in runs.items():
        assert run["quick"] is False, f"{slug} was recorded in quick mode"
        assert run["data"] in record_run.DATA_LABELS, slug
        assert run["machine"]["cpu_model"] and run["wall_s"] > 0, slug
    # One machine and one backend for the pages run without a GPU, and one GPU node and one
    # backend for those run beside a GPU (a GPU node often has no TensorFlow): each page's box
    # names its own machine, so a reader never takes one machine's output for the other's.
    for beside_gpu in (False, True):
        group = [run for run in runs.values() if bool(run["machine"].get("gpu")) == beside_gpu]
        assert len({json.dumps(run["machine"], sort_keys=True) for run in group}) <= 1, group
        assert len({run["backend"] for run in group}) <= 1, group


def test_the_executed_folder_stays_small():
    assert record_run.check_size(ROOT / "executed") is None
    assert "over the limit" in record_run.check_size(ROOT / "notebooks", limit=1)


def test_the_cnn_episode_shows_a_model_that_still_makes_mistakes():
    text = streams(records()["05-cpu-vs-gpu"])
    found = re.findall(r"Test accuracy of the [\w:]+ model: ([0-9.]+)", text)
    assert found, "the CNN episode's record prints no test accuracy"
    low, high = TEACHING_ACCURACY
    assert low <= float(found[-1]) <= high, found
    shown = "".join(output.get("data", {}).get("text/plain", "")
                    for cell in records()["05-cpu-vs-gpu"].cells if cell.cell_type == "code"
                    for output in cell.outputs)
    assert 'Model: "cifar_cnn"' in shown and "Total params" in shown
    # Keras' log: one line an epoch (the bar's last state), not one a step.
    epochs = re.findall(r"^Epoch \d+/\d+$", text, flags=re.MULTILINE)
    assert epochs and len(text.splitlines()) < 20 * len(epochs)


def _recorded_epochs(text: str, label: str) -> list[float] | None:
    match = re.search(re.escape(label) + r"\s*(\[[0-9., ]+\])", text)
    return ast.literal_eval(match.group(1)) if match else None


def test_the_recorded_timings_agree_with_the_reference_results():
    """The CPU (and GPU) epochs of the CNN episode's record, against the newest reference record
    of the same device kind on the same machine in results/cnn-cpu-vs-gpu.jsonl."""
    nb = records()["05-cpu-vs-gpu"]
    run = nb.metadata[recorded.METADATA_KEY]
    assert not run["quick"], "a quick-mode record has no timings to compare"
    text = streams(nb)
    results = [json.loads(line) for line in
               (ROOT / "results" / "cnn-cpu-vs-gpu.jsonl").read_text(encoding="utf-8").splitlines()
               if line.strip()]
    # Training records only: the same file keeps the run's prediction records.
    results = [r for r in results if r.get("experiment", "cnn-cpu-vs-gpu") == "cnn-cpu-vs-gpu"]
    pairs = [("cpu", _recorded_epochs(text, "epoch times (s):"))]
    if run["machine"]["gpu_count"]:
        pairs.append(("gpu", _recorded_epochs(text, "| epoch times (s):")))
    for kind, epochs in pairs:
        assert epochs, f"the record prints no {kind.upper()} epoch times"
        same = [r for r in results if r["device_kind"] == kind and r["data"] == run["data"]
                and r["cpu_model"] == run["machine"]["cpu_model"]
                and r["cores_usable"] == run["machine"]["cores_usable"]]
        assert same, (f"no {kind.upper()} reference record on the machine of the recorded run "
                      f"({run['machine']['cpu_model']}): run 'make reference' there")
        reference = statistics.median(same[-1]["epoch_seconds"][1:] or same[-1]["epoch_seconds"])
        mine = statistics.median(epochs[1:] or epochs)
        assert 1 / TIMING_FACTOR <= mine / reference <= TIMING_FACTOR, (
            f"{kind.upper()} epochs: {mine:.1f} s in the recorded run, {reference:.1f} s in the "
            f"reference results of the same machine: one of the two ran on a busy machine; "
            f"record both again on a quiet one ('make reference')")
