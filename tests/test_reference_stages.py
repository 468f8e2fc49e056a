"""The reference run's stages (tools/reference.py): bounded in time, able to go on without
recording anything twice, runnable with a Python that has the packages and installs nothing."""

import json
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest
import reference
import steps
from conftest import ROOT, lesson_files

from gpulesson.machine import preflight
from gpulesson.machine.timing import process_stat

# A step that records three conditions of a run, each a line "run_id condition", skipping those
# its run already has, as the experiments do with --run-id. Condition 2 hangs while the file
# HANG exists, after starting a child process that ignores SIGTERM: only the stage's stop ends it.
STEP = textwrap.dedent("""
    import argparse, os, subprocess, sys, time, uuid
    from pathlib import Path
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--run-id", default=None)
    args = parser.parse_args()
    out = Path(args.out)
    run_id = args.run_id or uuid.uuid4().hex
    done = {line.split()[1] for line in out.read_text().splitlines()
            if line.split()[0] == run_id} if out.exists() else set()
    for condition in ("1", "2", "3"):
        if condition in done:
            continue
        if condition == "2" and (out.parent / "HANG").exists():
            # A child that ignores SIGTERM: only the stop's SIGKILL to the group ends it.
            child = subprocess.Popen([sys.executable, "-c", "import signal, time; "
                                      "signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"])
            (out.parent / "child.pid").write_text(str(child.pid))
            time.sleep(600)
        with open(out, "a") as f:
            f.write(f"{run_id} {condition}\\n")
""")


def _stage(tmp_path, *, needs=()) -> reference.Stage:
    script = tmp_path / "step.py"
    script.write_text(STEP)
    step = steps.Step("conditions", [str(script), str(tmp_path / "records.txt")], needs,
                          resumable=True)
    return reference.Stage("try", "three conditions", "seconds", [step])


def _lines(tmp_path) -> list[str]:
    return (tmp_path / "records.txt").read_text().splitlines()


def test_a_stage_stopped_at_its_limit_keeps_what_finished_and_goes_on_without_duplicates(
        tmp_path, monkeypatch):
    stage, state = _stage(tmp_path), tmp_path / "state.json"
    # The hanging child ignores SIGTERM: the stop waits the grace out, then kills. A short
    # grace keeps the test short; the order of the stop is the same.
    monkeypatch.setattr(steps, "GRACE", 3.0)
    (tmp_path / "HANG").touch()
    with pytest.raises(steps.StageStopped, match=r"time limit .* python tools/reference\.py try"):
        # Long enough for condition 1 (one line of a file, after Python starts) on a busy
        # machine; condition 2 hangs until the limit.
        reference.run_stage(stage, time_limit=12, state_file=state, say=lambda *a: None)
    first = _lines(tmp_path)
    assert [line.split()[1] for line in first] == ["1"], "condition 1 finished and is kept"
    # The step and the child it started were stopped together (the stage's process group).
    child = int((tmp_path / "child.pid").read_text())
    stat = process_stat(child)  # None: gone; state Z: a zombie, stopped too
    assert stat is None or stat[0] == "Z", "a process the step started outlived the stage's stop"
    run_id = json.loads(state.read_text())["runs"]["conditions"]
    assert first[0].split()[0] == run_id, "the run id was saved before the step ran"

    (tmp_path / "HANG").unlink()
    reference.run_stage(stage, time_limit=0, state_file=state, say=lambda *a: None)
    lines = _lines(tmp_path)
    assert sorted(lines) == sorted(f"{run_id} {c}" for c in "123"), "one run, no duplicate"
    assert json.loads(state.read_text())["stages"]["try"]["done"] == ["conditions"]

    said = []
    reference.run_stage(stage, time_limit=0, state_file=state, say=said.append)
    assert "already done" in said[0] and _lines(tmp_path) == lines
    reference.run_stage(stage, time_limit=0, state_file=state, fresh=True, say=lambda *a: None)
    assert len(_lines(tmp_path)) == 6, "--fresh records a new run"


def test_a_failing_step_says_how_to_go_on(tmp_path):
    stage = reference.Stage("broken", "fails", "seconds",
                            [steps.Step("boom", ["-c", "raise SystemExit(3)"])])
    with pytest.raises(steps.StageStopped, match=r"boom failed \(exit status 3\).*"
                                                     r"python tools/reference.py broken"):
        reference.run_stage(stage, time_limit=0, state_file=tmp_path / "s.json",
                            say=lambda *a: None)


def test_a_missing_package_is_named_with_its_pin_before_anything_runs(tmp_path):
    stage = _stage(tmp_path, needs=("numpy", "no_such_package_for_the_lesson"))
    with pytest.raises(preflight.MissingPackage) as caught:
        reference.run_stage(stage, time_limit=0, state_file=tmp_path / "s.json",
                            say=lambda *a: None)
    message = str(caught.value)
    assert "no_such_package_for_the_lesson" in message and "numpy," not in message
    assert "pip install" in message and "--no-index" in message and "\n" not in message
    assert not (tmp_path / "records.txt").exists(), "nothing ran"
    assert preflight.pinned("keras") == f"keras=={_pin('keras')}"
    assert preflight.pinned("scikit-learn").startswith("scikit-learn==")


def _pin(name: str) -> str:
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if line.startswith(f"{name}=="):
            return line.split("==")[1]
    raise AssertionError(f"{name} not pinned")


def test_the_command_passes_the_run_id_and_puts_the_gpu_first():
    step = reference.STAGES["core"].steps[0]
    assert steps.command(step, "r1", gpu=True, python="py") == [
        "py", "-m", "gpulesson.experiments.cnn", "--run-id", "r1", "--devices", "gpu", "cpu"]
    assert steps.command(step, "r1", gpu=False, python="py")[-2:] == ["--run-id", "r1"]
    assert reference.expand("gpu-node") == list(reference.GPU_NODE)
    assert "contention" not in reference.GPU_NODE and "contention" in reference.expand("all")
    # Feeding: the GPU's stage, then the CPU's, four pipelines beside a GPU, all without one.
    on_cpu = reference.STAGES["feeding-cpu"].steps[0]
    assert "--pipelines" in steps.command(on_cpu, "r", gpu=True)
    assert "--pipelines" not in steps.command(on_cpu, "r", gpu=False)
    from gpulesson.experiments.feeding.measure import REFERENCE_CPU_STEPS

    assert steps.FEEDING_CPU_STEPS == str(REFERENCE_CPU_STEPS)
    extra = {"REFERENCE_ARGS_FEEDING": "--pipelines lesson 'classic'"}
    assert steps.extra_arguments(on_cpu, extra) == ["--pipelines", "lesson", "classic"]
    assert steps.extra_arguments(step, extra) == []


def test_steps_of_one_experiment_in_two_stages_are_one_run_and_a_gpu_step_waits_for_a_gpu(tmp_path):
    script = tmp_path / "step.py"
    script.write_text(STEP)
    out = str(tmp_path / "records.txt")
    first = reference.Stage("one", "", "", [steps.Step("a", [str(script), out], resumable=True,
                                                            run="shared")])
    second = reference.Stage("two", "", "", [
        steps.Step("gpu part", ["-c", "raise SystemExit(9)"], gpu_only=True),
        steps.Step("b", [str(script), out], resumable=True, run="shared")])
    state, said = tmp_path / "state.json", []
    for stage in (first, second):
        reference.run_stage(stage, time_limit=0, state_file=state, gpu=False, say=said.append)
    assert any("gpu part: skipped, no GPU" in line for line in said)
    run_ids = {line.split()[0] for line in _lines(tmp_path)}
    assert run_ids == {json.loads(state.read_text())["runs"]["shared"]}, "one run"
    assert len(_lines(tmp_path)) == 3, "the second stage went on with the first's run"


def test_a_run_needs_its_data_chosen(monkeypatch, capsys):
    monkeypatch.delenv("LESSON_DATA", raising=False)
    assert reference.main(["core"]) == 1
    assert "LESSON_DATA=synthetic" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        reference.main(["nothing-such"])


def test_the_pack_holds_the_run_under_its_limit_or_is_not_written(tmp_path):
    out = steps.pack(tmp_path / "run.tar.gz", say=lambda *a: None)
    assert out.stat().st_size <= steps.PACK_LIMIT
    with tarfile.open(out) as archive:
        names = archive.getnames()
    for folder in steps.PACKED:
        assert any(n.startswith(f"{folder}/") for n in names), folder
    assert any(n.startswith("executed/05") for n in names) and not any("__pycache__" in n for n in names)
    with pytest.raises(steps.StageStopped, match="over its limit"):
        steps.pack(tmp_path / "small.tar.gz", limit=1000, say=lambda *a: None)
    assert not list(tmp_path.glob("small*")), "no half-written archive"


# Stages run whole, in quick mode, through the path a GPU node takes: `make stage` with
# LESSON_PYTHON, in a copy of the lesson that has no environment of its own (make would build
# one otherwise). One of each kind, to keep the suite short: a notebook (notebooks-2, first,
# while the copy's results still match its notebooks: a real run refills them in notebooks-1),
# several experiments and a GPU-only step (core), one process per backend (ceiling) and the
# pack, which refills figures and notebooks and comes last. Every other stage runs the same
# machinery with other arguments: those arguments are checked by the experiment's own parser
# below, and each experiment's own tests run it.
QUICK_STAGES = ["notebooks-2", "core", "ceiling", "pack"]


def _experiment_steps():
    for stage in reference.STAGES.values():
        for step in stage.steps:
            if step.argv and step.argv[0] == "-m" and step.argv[1].startswith(steps.MODULE):
                yield pytest.param(step, id=f"{stage.name}: {step.name}")


@pytest.mark.parametrize("step", list(_experiment_steps()))
def test_every_stage_step_has_arguments_its_experiment_accepts(step):
    """What `make stage` would run, with and without a GPU and with the suite's shorter
    arguments, parses as the experiment's command line."""
    import importlib

    name = step.argv[1]
    module = importlib.import_module(f"{name}.__main__")
    for gpu in (False, True):
        argv = steps.command(step, "run-1", gpu=gpu, python="py")[3:]
        argv += steps.extra_arguments(step, SHORTER)
        module.COMMAND.parser().parse_args(argv)  # an unknown option or bad value exits here


@pytest.fixture(scope="module")
def node_copy(tmp_path_factory):
    root = lesson_files(tmp_path_factory.mktemp("node"))
    assert not (root / ".venv").exists()
    return root, tmp_path_factory.mktemp("node-data")


# The experiments measure fewer conditions here, to keep the suite short: their own tests
# cover the rest, and a rehearsal of the stages at quick sizes runs them whole.
SHORTER = {"REFERENCE_ARGS_FEEDING": "--pipelines lesson",
           "REFERENCE_ARGS_CONTENTION": "--parts copies --copies 1 --cpu-threads",
           "REFERENCE_ARGS_CEILING": "--backends jax --pipelines ram lesson",
           "REFERENCE_ARGS_CNN": "--epochs 2", "REFERENCE_ARGS_TORCH_REFERENCE": "--epochs 2",
           "REFERENCE_ARGS_MATMUL": "--dtypes float32 --sizes 64 128",
           "REFERENCE_ARGS_SMALL_MODELS": "--widths 16 --batch-sizes 32"}


def _make_stage(root: Path, data_dir: Path, stage: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "LESSON_DATA": "synthetic", "LESSON_QUICK": "1",
           "LESSON_DATA_DIR": str(data_dir), "MPLBACKEND": "Agg", **SHORTER}
    return subprocess.run(["make", "--no-print-directory", "stage", f"STAGE={stage}",
                           f"LESSON_PYTHON={sys.executable}", "STAGE_TIME_LIMIT=0"],
                          cwd=root, env=env, capture_output=True, text=True, timeout=1200)


def _recorded_wall(step) -> float:
    """Seconds the notebook of the stage's step ``step`` took in the lesson's recorded run."""
    number = step.argv[step.argv.index("--only") + 1]
    record = next((ROOT / "executed").glob(f"{number}-*.ipynb"))
    return json.loads(record.read_text())["metadata"]["recorded_run"]["wall_s"]


@pytest.mark.parametrize("stage", QUICK_STAGES)
def test_each_stage_runs_in_quick_mode_with_an_existing_python(node_copy, stage):
    root, data_dir = node_copy
    if stage.startswith("notebooks"):
        # One notebook of the stage stands for the others (each is the same command): the one
        # whose full-size run in the lesson's record (executed/) was the shortest.
        spec = reference.STAGES[stage]
        stand_in = min((s for s in spec.steps if s.name.startswith("notebook")), key=_recorded_wall)
        state = root / "_build" / "reference" / "state.json"
        state.parent.mkdir(parents=True, exist_ok=True)
        saved = json.loads(state.read_text()) if state.exists() else {}
        saved.setdefault("stages", {})[stage] = {
            "done": [s.name for s in spec.steps if s.name.startswith("notebook") and s is not stand_in]}
        state.write_text(json.dumps(saved))
    done = _make_stage(root, data_dir, stage)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "pip install" not in output and not (root / ".venv").exists(), "nothing installed"
    assert f"Stage {stage} done" in output, output[-2000:]
    built = root / "_build" / "reference"
    if stage == "pack":
        assert (built / "reference-run.tar.gz").is_file()
        # The run is complete: its state is kept under its date, and a new run starts afresh.
        assert not (built / "state.json").exists() and list(built.glob("state-*.json"))
        return
    # A second time, the stage says it is done and records nothing more.
    before = {p.name: p.read_bytes() for p in (root / "results").glob("*.jsonl")}
    again = _make_stage(root, data_dir, stage)
    assert again.returncode == 0 and "already done" in again.stdout, again.stdout[-2000:]
    assert {p.name: p.read_bytes() for p in (root / "results").glob("*.jsonl")} == before
