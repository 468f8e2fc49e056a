"""The guide's example of the readiness check on a GPU node: the record the check's job part
appends (python -m gpulesson.classroom.check --inside-job --record), the guide's text with and without
one, and the step of the budgeted GPU run that makes it. The records here are test fixtures,
made in tmp_path: no GPU has been measured by these tests."""

import json
import os
import subprocess
import sys
from pathlib import Path

import budget
import pytest
import steps
from carpentry import (
    MISSING,
    fill_placeholders,
    has_placeholders,
    result_sources,
    result_values,
    site_values,
)
from conftest import ROOT

from gpulesson.classroom.check import example, report
from gpulesson.datasets.settings import get_settings
from gpulesson.machine.pinned import pinned_environment, same_version
from gpulesson.records.results import append_record, read_records

GUIDE = ROOT / "guide.md"
NO_RUN_YET = "no GPU node\nhas run it for this lesson yet"
# A test fixture: what a node's checklist could hold, not anything measured.
FIXTURE_GPU = "NVIDIA Test-Fixture GPU"
FIXTURE_ENVIRONMENT = {"date": "2026-01-02T03:04:05+00:00", "cpu_model": "Fixture CPU",
                       "cores_usable": 16, "device": FIXTURE_GPU, "gpu_count": 1,
                       "backend": "jax", "versions": {"keras": "3.0.0", "jax": "0.0.1"}}


def fixture_items():
    home = str(Path.home())
    return [report.ok("Kernel's settings", "XLA_PYTHON_CLIENT_PREALLOCATE=false", where="job"),
            report.ok("GPUs (nvidia-smi)", f"1 × {FIXTURE_GPU}, driver 1.2.3", where="job"),
            report.ok("Data read on this node", f"{home}/gpulesson-data/synthetic.h5 (128 images "
                      "read)", where="job"),
            report.fail("Training steps on the GPU", "a fixture's failure", "a fixture's fix",
                        where="job")]


def guide_with(results: Path) -> str:
    """The guide as the site shows it, its check example from the results file ``results``."""
    values = {**site_values(ROOT), **example.substitutions(results)}
    return fill_placeholders(GUIDE.read_text(encoding="utf-8"), ROOT, values)


def test_without_a_gpu_record_the_guide_says_once_that_no_gpu_node_has_run_it(tmp_path):
    path = tmp_path / "check-gpu.jsonl"
    check_values = {k: v for k, v in example.substitutions(path).items() if k.startswith("ref_check")}
    assert check_values == {"ref_check_gpu": MISSING, "ref_check_gpu_title": MISSING,
                            "ref_check_gpu_environment": MISSING}
    # A record made without a GPU is not an example of the GPU items.
    settings = get_settings({"LESSON_DATA": "synthetic"})
    append_record(path, example.check_record(fixture_items(), settings, [], None,
                                             environment={**FIXTURE_ENVIRONMENT, "device": "CPU"}))
    assert example.substitutions(path)["ref_check_gpu"] == MISSING
    guide = guide_with(path)
    assert guide.count(NO_RUN_YET) == 1 and not has_placeholders(guide)
    assert "What the job part printed on a GPU node" not in guide


def test_a_gpu_record_is_shown_as_the_check_prints_it_titled_with_the_gpu_and_date(tmp_path):
    path = tmp_path / "check-gpu.jsonl"
    settings = get_settings({"LESSON_DATA": "synthetic", "LESSON_QUICK": "1"})
    items = fixture_items()
    record = example.check_record(items, settings, [FIXTURE_GPU], "1.2.3",
                                  environment=FIXTURE_ENVIRONMENT)
    append_record(path, record)
    [stored] = read_records(path)
    assert stored["device_kind"] == "gpu" and stored["nvidia_smi"] == {"gpus": [FIXTURE_GPU],
                                                                       "driver": "1.2.3"}
    assert stored["quick"] is True and stored["passed"] is False and "host" not in stored
    assert str(Path.home()) not in json.dumps(stored["items"]), "the home folder is written ~"
    values = example.substitutions(path)
    printed = report.text(items).replace(str(Path.home()), "~")
    assert values["ref_check_gpu"] == printed
    assert values["ref_check_gpu_title"] == (f"1 × {FIXTURE_GPU}, driver 1.2.3, on 2026-01-02 "
                                             "(Keras 3.0.0, jax 0.0.1)")
    # The node ran its own environment: the guide says so, with its versions and the pins.
    pins = pinned_environment()
    assert values["ref_check_gpu_environment"] == (
        "The check ran in the node's own Python environment, not the lesson's pinned one: "
        f"Keras 3.0.0, JAX 0.0.1, where the lesson pins Keras {pins['keras']}, JAX {pins['jax']}.")
    guide = guide_with(path)
    assert NO_RUN_YET not in guide and not has_placeholders(guide)
    assert f"```text\n{printed}\n```" in guide
    assert f"```\n\n{values['ref_check_gpu_environment']}" in guide
    assert f"What the job part printed on a GPU node, {values['ref_check_gpu_title']}," in guide
    # A later run without a GPU leaves the GPU's example in place.
    append_record(path, example.check_record(items[:1], settings, [], None,
                                             environment={**FIXTURE_ENVIRONMENT, "device": "CPU"}))
    assert example.substitutions(path) == values


def test_the_environment_says_which_one_the_node_ran_its_backends_and_the_drivers(tmp_path):
    """A node's own environment, with another CUDA than the pinned builds': both versions, the
    backends the check found (no TensorFlow), and the driver each CUDA needs; the pinned one:
    said so, nothing more."""
    pins = pinned_environment()
    items = [{"name": "GPU in Keras (JAX)", "status": "ok", "detail": "", "fix": "", "where": "job"},
             {"name": "GPU in Keras (PyTorch)", "status": "ok", "detail": "", "fix": "",
              "where": "job"}]
    own = {"versions": {"python": "3.12.3", "keras": pins["keras"], "jax": "0.11.2"},
           "gpu": {"cuda_runtime_version": "13.0"}, "items": items}
    assert example.environment(own, ROOT) == (
        "The check ran in the node's own Python environment, not the lesson's pinned one: "
        f"Python 3.12.3, Keras {pins['keras']}, JAX 0.11.2, CUDA 13.0, where the lesson pins "
        f"Python {pins['python']}, Keras {pins['keras']}, JAX {pins['jax']}. It found the Keras "
        f"backends JAX and PyTorch, and no TensorFlow (the lesson pins {pins['tensorflow']}). "
        "Its driver item holds for CUDA 13.0, which needs driver 580 or newer; the lesson's "
        f"pinned TensorFlow and JAX are built for CUDA {pins['cuda']} and need driver 525 or "
        "newer (the setup page).")
    pinned = {"versions": {"python": f"{pins['python']}.7", "keras": pins["keras"],
                           "tensorflow": pins["tensorflow"]},
              "gpu": {"cuda_runtime_version": "12.8"},
              "items": [{**items[0], "name": "GPU in Keras (TensorFlow)"}]}
    assert example.environment(pinned, ROOT) == (
        f"The check ran in the lesson's pinned environment (Python {pins['python']}.7, Keras "
        f"{pins['keras']}, TensorFlow {pins['tensorflow']}, CUDA 12.8). It found the Keras "
        "backend TensorFlow.")


def test_the_pins_are_those_of_the_environment_file():
    pins = pinned_environment()
    environment_yml = (ROOT / "environment.yml").read_text(encoding="utf-8")
    for line in (f"- python={pins['python']}\n", f"- keras=={pins['keras']}\n",
                 f"- tensorflow[and-cuda]=={pins['tensorflow']}\n",
                 f"- jax[cuda{pins['cuda']}]=={pins['jax']}\n"):
        assert line in environment_yml, line
    assert f"\ntorch=={pins['torch']}\n" in (ROOT / "requirements" / "torch.txt").read_text()
    assert same_version("3.11.7", "3.11") and same_version("2.15.0+cu132", "2.15.0")
    assert not same_version("3.12.3", "3.11") and not same_version("2.11.0+cu130", "2.15.0")


def test_the_example_is_a_source_of_the_pages_values(tmp_path):
    assert "gpulesson.classroom.check.example" in result_sources()
    (tmp_path / "results").mkdir()
    assert result_values(tmp_path, ("gpulesson.classroom.check.example",))["ref_check_gpu"] == MISSING


@pytest.mark.bad_input("no GPU")
def test_the_command_records_a_node_without_a_gpu_as_such(tmp_path):
    out = tmp_path / "check-gpu.jsonl"
    env = {**os.environ, "LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
           "LESSON_DATA_DIR": str(tmp_path / "data"), "PATH": str(Path(sys.executable).parent)}
    run = lambda *args: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "gpulesson.classroom.check", *args], cwd=ROOT, env=env,
        capture_output=True, text=True, timeout=600)
    refused = run("--record", str(out))
    assert refused.returncode == 2 and "--record goes with --inside-job" in refused.stderr
    result = run("--inside-job", "--json", str(tmp_path / "job.json"), "--record", str(out))
    assert result.returncode == 0 and f"Recorded in {out}" in result.stdout, result.stderr
    [record] = read_records(out)
    assert record["device_kind"] == "cpu" and record["nvidia_smi"] == {"gpus": [], "driver": None}
    assert record["experiment"] == example.EXPERIMENT and record["versions"]["keras"]
    assert [item["name"] for item in record["items"]][:3] == [
        "Kernel's settings", "Class folder written from this node", "GPUs (nvidia-smi)"]
    assert example.substitutions(out)["ref_check_gpu"] == MISSING


def test_the_budgeted_gpu_run_makes_the_record_after_its_two_leases_and_only_beside_a_gpu():
    step = budget.CHECK_GPU
    # In the last lease: after every GPU record that the pages take from the run.
    last = max(budget.LEASES)
    [planned] = [p for p in budget.PLAN if p.step is step]
    assert step.gpu_only and planned.lease == last and "on the H200 node" in planned.basis
    argv = steps.command(step, None, True)
    assert argv[1:4] == ["-m", "gpulesson.classroom.check", "--inside-job"]
    record = Path(argv[argv.index("--record") + 1])
    assert record == example.RESULTS_FILE.relative_to(ROOT) and record.parts[0] in budget.RECORDS
    # The job's settings: the kernel's, and a class folder every node has.
    env = dict(step.env)
    assert env["XLA_PYTHON_CLIENT_PREALLOCATE"] == "false" and env["LESSON_CLASS_RESULTS"] == "/tmp"
    state = {"data": "synthetic", "quick": True, "gpu": None, "runs": {}, "calls": [], "done": {}}
    assert step.name not in [p.name for p in budget.lacking(state, None, last)]
    assert step.name not in [p.name for p in budget.lacking(state, "NVIDIA H100 80GB HBM3", last - 1)]
    assert step.name in [p.name for p in budget.lacking(state, "NVIDIA H100 80GB HBM3", last)]
