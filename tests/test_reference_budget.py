"""The budgeted reference run (tools/budget.py) and the three ways a run could be lost between
calls: a pack whose saved state said it was half done, a step that outlived a SIGTERM, a GPU-only
step marked done on a CPU. Fake steps stand in for the experiments: the machinery is tested."""

import json
import os
import re
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import budget
import pytest
import reference
import steps
from conftest import ROOT, lesson_files

from gpulesson.machine.timing import process_stat

QUIET = {"say": lambda *a: None}


def _marker_step(tmp_path: Path, name: str, **kwargs) -> steps.Step:
    """A step that appends a line to ``name``.txt each time it runs."""
    out = tmp_path / f"{name}.txt"
    return steps.Step(name, ["-c", f"open({str(out)!r}, 'a').write('ran\\n')"], **kwargs)


def _runs(tmp_path: Path, name: str) -> int:
    path = tmp_path / f"{name}.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_restored_pack_state_redraws_the_figures_and_refills_the_notebooks(tmp_path, monkeypatch):
    monkeypatch.setattr(steps, "STATE_DIR", tmp_path / "build")
    monkeypatch.setattr(steps, "PACKED", ("results",))
    stage = reference.Stage("pack", "", "", [_marker_step(tmp_path, "figures"), steps.Step("pack", None)])
    state = tmp_path / "build" / "state.json"
    reference.run_stage(stage, time_limit=0, state_file=state, **QUIET)
    with tarfile.open(tmp_path / "build" / "reference-run.tar.gz") as archive:
        packed = json.load(archive.extractfile("reference-logs/state.json"))
    assert "pack" not in packed.get("stages", {}), "the packed state marks the pack begun"
    state.write_text(json.dumps(packed))  # a later call, from what came back
    reference.run_stage(stage, time_limit=0, state_file=state, **QUIET)
    assert _runs(tmp_path, "figures") == 2, "a restored state must redraw before it packs"


# A stage whose step starts a child and sleeps; each writes its pid.
HANGING = textwrap.dedent("""
    import os, subprocess, sys, time
    from pathlib import Path
    here = Path(sys.argv[1])
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    (here / "child.pid").write_text(str(child.pid))
    (here / "step.pid").write_text(str(os.getpid()))
    time.sleep(600)
""")
DRIVER = textwrap.dedent("""
    import sys
    sys.path[:0] = [{tools!r}]
    from pathlib import Path
    import reference
    reference.STATE_DIR = Path({here!r}) / "build"  # the state and log stay out of the lesson
    step = reference.Step("hang", [{script!r}, {here!r}])
    reference.STAGES["hang"] = reference.Stage("hang", "", "", [step])
    raise SystemExit(reference.main(["hang", "--time-limit", "0"]))
""")


def test_sigterm_stops_the_stage_and_its_steps_process_group(tmp_path):
    (tmp_path / "hang.py").write_text(HANGING)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(tools=str(ROOT / "tools"), script=str(tmp_path / "hang.py"),
                                    here=str(tmp_path)))
    stage = subprocess.Popen([sys.executable, str(driver)], cwd=tmp_path, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             env={**os.environ, "LESSON_DATA": "synthetic"})
    deadline = time.monotonic() + 60
    while not (tmp_path / "child.pid").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.3)
    pids = [int((tmp_path / f"{n}.pid").read_text()) for n in ("step", "child")]
    stage.send_signal(signal.SIGTERM)  # what `timeout` sends
    output, _ = stage.communicate(timeout=60)
    assert stage.returncode == 128 + signal.SIGTERM, output
    assert "stopped by SIGTERM" in output
    for pid in pids:
        stat = process_stat(pid)  # None: gone; state Z: a zombie, stopped too
        assert stat is None or stat[0] == "Z", f"process {pid} of the step outlived the stage"
    assert (tmp_path / "build" / "hang.log").exists()


def test_a_gpu_only_step_skipped_without_a_gpu_is_not_marked_done(tmp_path):
    stage = reference.Stage("mixed", "", "", [_marker_step(tmp_path, "cpu"),
                                              _marker_step(tmp_path, "gpu", gpu_only=True)])
    state, said = tmp_path / "state.json", []
    reference.run_stage(stage, time_limit=0, state_file=state, gpu=False, say=said.append)
    assert json.loads(state.read_text())["stages"]["mixed"]["done"] == ["cpu"]
    reference.run_stage(stage, time_limit=0, state_file=state, gpu=False, say=said.append)
    assert "already done" in said[-1] and "left for a machine with a GPU: gpu" in said[-1]
    # The state carried to a GPU node: the GPU-only step runs there, the rest is not redone.
    reference.run_stage(stage, time_limit=0, state_file=state, gpu=True, **QUIET)
    assert (_runs(tmp_path, "cpu"), _runs(tmp_path, "gpu")) == (1, 1)


def test_pytorch_steps_wait_passively_unless_told_otherwise(tmp_path, monkeypatch):
    probe = ["-c", "import os; print('policy', os.environ.get('OMP_WAIT_POLICY'))"]
    torch_steps = [p.step for p in budget.PLAN if "torch" in p.step.needs]
    assert torch_steps and all(s.env == steps.TORCH_ENV for s in torch_steps)
    for preset, expected in ((None, "PASSIVE"), ("ACTIVE", "ACTIVE")):
        if preset:
            monkeypatch.setenv("OMP_WAIT_POLICY", preset)
        else:
            monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        log = tmp_path / f"log-{expected}"
        with open(log, "w") as handle:
            assert steps.run_step([sys.executable, *probe], time.monotonic() + 60, handle,
                                    steps.TORCH_ENV) == 0
        assert f"policy {expected}" in log.read_text()


def _state(**done) -> dict:
    return {"data": "synthetic", "quick": True, "gpu": None, "runs": {}, "calls": [], "done": done}


def test_what_a_call_lacks_depends_on_the_gpu_it_has():
    names = lambda planned: [p.name for p in planned]  # noqa: E731
    every = max(budget.LEASES)
    on_cpu = names(budget.lacking(_state(), None, every))
    # The headline first: the lease-1 steps, in the plan's order.
    assert on_cpu[0] == next(p.name for p in budget.PLAN if not p.step.gpu_only)
    assert not any(p.step.gpu_only and p.name in on_cpu for p in budget.PLAN)
    methods = {p.name: p.method for p in budget.PLAN}
    rehearsed = _state(**{name: {"gpu": None, "method": methods[name]} for name in on_cpu})
    assert budget.lacking(rehearsed, None, every) == []
    # Carried to a GPU node: every step with a GPU part is lacking, the GPU-only ones too.
    on_gpu = names(budget.lacking(rehearsed, "H100", every))
    assert "DDP on the GPUs (NCCL)" in on_gpu and "feeding on the GPU" in on_gpu and "cnn" in on_gpu
    assert "notebook 05" in on_gpu, "the notebook a reader sees must be recorded beside the GPU"
    done_there = _state(**{p.name: {"gpu": "H100", "method": p.method} for p in budget.PLAN})
    assert budget.lacking(done_there, "H100", every) == []
    assert all(p.lease == 1 for p in budget.lacking(_state(), "H100", 1))


def test_a_run_stays_on_its_gpu_model_data_and_size(tmp_path, monkeypatch):
    monkeypatch.setenv("LESSON_DATA", "synthetic")
    monkeypatch.setenv("LESSON_QUICK", "1")
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**_state(), "gpu": "NVIDIA H100 80GB HBM3"}))
    with pytest.raises(steps.StageStopped, match="same GPU model"):
        budget.open_run(path, "NVIDIA H200", fresh=False)
    assert budget.open_run(path, "NVIDIA H200", fresh=True)["gpu"] == "NVIDIA H200"
    monkeypatch.setenv("LESSON_QUICK", "0")
    with pytest.raises(steps.StageStopped, match="quick"):
        budget.open_run(path, "NVIDIA H100 80GB HBM3", fresh=False)


def test_every_planned_step_has_an_estimate_and_its_basis():
    for planned in budget.PLAN:
        low, high = planned.estimate
        assert 0 < low <= high and len(planned.basis) > 30 and planned.lease in budget.LEASES
    # Each lease's steps fit one call of about 9 minutes by their high estimates.
    for lease in budget.LEASES:
        assert sum(p.estimate[1] for p in budget.PLAN if p.lease == lease) <= budget.LEASE_STEPS


def test_what_the_committed_run_lacks_takes_the_fewest_leases_the_headline_first():
    """The steps the committed run lacks on its GPU model fill the leases in order, and one
    lease fewer could not hold them by their high estimates."""
    state = steps.load_state(budget.STATE_FILE)
    lacking = budget.lacking(state, state["gpu"], max(budget.LEASES))
    leases = sorted({p.lease for p in lacking})
    assert leases == list(range(1, len(leases) + 1)), "no lease is left empty before another"
    high = sum(p.estimate[1] for p in lacking)
    assert high > budget.LEASE_STEPS * (len(leases) - 1), "the plan could use fewer leases"
    first = [p.name for p in lacking if p.lease == 1]
    assert first[:2] == ["ladder's stream through Grain", "ceiling on the GPU"], \
        "the headline leads: the stream read by processes"
    text = (ROOT / "recording.md").read_text(encoding="utf-8")
    sums = [sum(p.estimate[1] for p in lacking if p.lease == lease) for lease in leases]
    stated = ", ".join(f"{s} s" for s in sums[:-1]) + f" and {sums[-1]} s"
    assert stated in " ".join(text.split()), f"recording.md states the leases' sums: {stated}"
    # Superseded on the GPU by the settings experiment: never planned there again.
    assert not {"feeding settings on the GPU", "Grain's workers, every count",
                "settings on the GPU"} & {
        p.name for p in budget.PLAN}


# The budgeted command through the path a GPU node takes: the test's Python, nothing installed,
# in a copy of the lesson, quick mode. Fake steps stand in for the plan (the experiments have
# tests of their own): one that records three conditions, one that hangs until the deadline
# stops it, one for a GPU only. The figures and notebooks are refreshed by fakes too.
CONDITIONS = textwrap.dedent("""
    import argparse, time
    from pathlib import Path
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--run-id")
    args = parser.parse_args()
    out = Path(args.out)
    done = {l.split()[1] for l in out.read_text().splitlines() if l.split()[0] == args.run_id} \\
        if out.exists() else set()
    for condition in "123":
        if condition in done:
            continue
        while condition == "2" and out.with_suffix(".hang").exists():
            time.sleep(0.2)
        with open(out, "a") as f:
            f.write(f"{args.run_id} {condition}\\n")
""")
BUDGET_DRIVER = textwrap.dedent("""
    import sys
    sys.path[:0] = ["tools"]
    import budget, steps
    from steps import Step
    steps.GRACE, budget.MIN_START = 2.0, 1.0
    cond = lambda name, out: Step(name, ["fake/conditions.py", out], resumable=True)
    budget.PLAN[:] = [budget.Planned(cond("first", "fake/first.txt"), 1, (1, 2), "a fake"),
                      budget.Planned(cond("slow", "fake/slow.txt"), 1, (1, 2), "a fake"),
                      budget.Planned(Step("gpu", ["-c", "raise SystemExit(5)"], gpu_only=True), 2,
                                     (1, 2), "a fake")]
    steps.REFRESH[:] = [Step("figures", ["-c", "open('fake/figures.txt', 'a').write('x')"])]
    raise SystemExit(budget.main(sys.argv[1:]))
""")


def _budget(root: Path, out: Path, deadline: float) -> subprocess.CompletedProcess:
    """The budgeted command with fake steps. One of them hangs until it is stopped: a call that
    did not stop it at the deadline would run into this call's own timeout and fail the test
    (no wall-clock assertion: the step's result says that the deadline stopped it)."""
    env = {**os.environ, "LESSON_DATA": "synthetic", "LESSON_QUICK": "1", "MPLBACKEND": "Agg"}
    return subprocess.run([sys.executable, "fake/driver.py", "--deadline", str(deadline),
                           "--out", str(out), "--pack-reserve", "4"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


def test_the_budgeted_command_stops_by_its_deadline_packs_and_a_later_call_goes_on(tmp_path):
    root = lesson_files(tmp_path / "lesson")
    # A lesson whose budgeted run has not begun: the committed run's state stays behind.
    (root / "results" / "reference-run.json").unlink(missing_ok=True)
    fake = root / "fake"
    fake.mkdir()
    (fake / "conditions.py").write_text(CONDITIONS)
    (fake / "driver.py").write_text(BUDGET_DRIVER)
    (fake / "slow.hang").touch()
    first = _budget(root, tmp_path / "out1", deadline=14)
    output = first.stdout + first.stderr
    assert first.returncode == 0, output[-3000:]
    assert "pip install" not in output and not (root / ".venv").exists(), "nothing installed"
    files = sorted(p.name for p in (tmp_path / "out1").iterdir())
    assert files == sorted(budget.FILES) and len(files) <= 3
    for path in (tmp_path / "out1").iterdir():
        assert path.stat().st_size <= steps.PACK_LIMIT
    about = json.loads((tmp_path / "out1" / "budget.json").read_text())
    assert [s["result"] for s in about["steps"]] == ["done", "stopped at the deadline"]
    assert about["left"] == ["slow"] and about["left_for_a_gpu"] == ["gpu"]
    with tarfile.open(tmp_path / "out1" / "records.tar.gz") as archive:
        names = archive.getnames()
        state = json.load(archive.extractfile("results/reference-run.json"))
    assert any(re.match(r"_build/reference/budget-.*\.log", n) for n in names)
    assert list(state["done"]) == ["first"] and state["quick"] is True
    with tarfile.open(tmp_path / "out1" / "pages.tar.gz") as archive:
        assert {n.split("/")[0] for n in archive.getnames()} == {"fig", "notebooks", "executed"}
    assert (fake / "figures.txt").exists() and (fake / "figures.txt").read_text() == "x", about


    # Days later, elsewhere: only what was committed (results/, with the state) goes on.
    (fake / "slow.hang").unlink()
    run_id = state["runs"]["slow"]
    second = _budget(root, tmp_path / "out2", deadline=30)
    assert second.returncode == 0, (second.stdout + second.stderr)[-3000:]
    assert (fake / "first.txt").read_text().count("\n") == 3, "nothing recorded twice"
    lines = (fake / "slow.txt").read_text().splitlines()
    assert sorted(lines) == [f"{run_id} {c}" for c in "123"], "the same run went on"
    about = json.loads((tmp_path / "out2" / "budget.json").read_text())
    assert about["left"] == [] and len(json.loads((root / "results" / "reference-run.json")
                                                  .read_text())["calls"]) == 2


def _lease_commands() -> list[str]:
    text = (ROOT / "recording.md").read_text(encoding="utf-8")  # linked from the README
    section = text.split("## Recording on your cluster", 1)[1].split("\n## ", 1)[0]
    return [block for block in re.findall(r"```bash\n(.*?)```", section, re.DOTALL)
            if "reference.py budget --deadline $D" in block]


def test_the_readmes_lease_command_fits_a_job_step_and_names_only_options_budget_accepts():
    commands = _lease_commands()
    assert len(commands) == 1, "one lease command, the same for both leases"
    for command in commands:
        assert len(command) <= 2000, f"{len(command)} characters: recording.md promises at most 2,000"
        assert ".whl/*.whl" in command and "tee $OUT/" in command and "LESSON_DATA=synthetic" in command
        calls = re.findall(r"tools/reference\.py budget ([^\n;|&]*)", command)
        assert calls
        for call in calls:
            # The shell's values stand in as numbers and a folder; an unknown option exits here.
            args = budget.parser().parse_args(
                call.replace("$D", "450").replace("$OUT", "/tmp/out").split())
            assert args.deadline == 450 and args.out == Path("/tmp/out")
        # The budget's deadline leaves its outer limit and the 590-s call time to end.
        # (Not a measured time: the numbers written in the command.)
        written = int(re.search(r"D=\$\(\((\d+)-SECONDS\)\)", command).group(1))
        outer = re.search(r"timeout -k (\d+) \$\(\(D\+(\d+)\)\)", command)
        assert written + int(outer.group(2)) + int(outer.group(1)) <= 590


def test_make_budget_runs_the_budgeted_command_with_an_existing_python():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS", "BUDGET_"))}
    dry = subprocess.run(["make", "-n", "budget", "LESSON_PYTHON=python3", "BUDGET_DEADLINE=300",
                          "BUDGET_OUT=packed"], cwd=ROOT, env=env, capture_output=True, text=True,
                         timeout=60, check=True).stdout
    assert "python3 tools/reference.py budget --deadline 300 --out packed" in dry
    assert "pip" not in dry, "nothing installed"


def _fake_plan(monkeypatch, tmp_path: Path, plan: list) -> None:
    """The budgeted run with ``plan`` as its plan, run in this process: nothing redrawn, its
    logs in ``tmp_path``, each step run with this Python and its run id, in quick mode."""
    monkeypatch.setattr(budget, "PLAN", plan)
    monkeypatch.setattr(steps, "REFRESH", [])
    monkeypatch.setattr(budget, "LOG_DIR", tmp_path / "logs")
    monkeypatch.setattr(steps, "command", lambda step, run_id, gpu: [
        sys.executable, *step.argv, "--run-id", run_id])
    monkeypatch.setenv("LESSON_DATA", "synthetic")
    monkeypatch.setenv("LESSON_QUICK", "1")


def test_a_run_begun_on_a_cpu_goes_on_beside_a_gpu_as_a_new_run_and_stays_one(tmp_path, monkeypatch):
    """A CPU rehearsal's state carried to the node: the steps with a GPU part run again, in a
    new run (a run is one machine's), and two steps of one experiment share that run."""
    script = tmp_path / "conditions.py"
    script.write_text(CONDITIONS)
    out = str(tmp_path / "records.txt")
    shared = lambda name: steps.Step(name, [str(script), out], resumable=True,  # noqa: E731
                                         run="shared", with_gpu=("--gpu-too",))
    _fake_plan(monkeypatch, tmp_path, [budget.Planned(shared("a"), 1, (1, 2), "a fake"),
                                        budget.Planned(shared("b"), 1, (1, 2), "a fake")])
    state = tmp_path / "run.json"

    def call(gpu: str) -> dict:
        args = budget.parser().parse_args(["--deadline", "120", "--out", str(tmp_path / gpu),
                                           "--state", str(state), "--gpu", gpu])
        assert budget.run(args, say=lambda *a: None) == 0
        return json.loads(state.read_text())

    on_cpu = call("")
    on_gpu = call("H100")
    assert on_cpu["runs"]["shared"] != on_gpu["runs"]["shared"], "a new run beside the GPU"
    assert on_gpu["gpu"] == "H100" and set(on_gpu["done"]) == {"a", "b"}
    assert all(done["gpu"] == "H100" for done in on_gpu["done"].values())
    runs = [line.split()[0] for line in Path(out).read_text().splitlines()]
    assert runs.count(on_gpu["runs"]["shared"]) == 3, "both steps of the GPU's run in one run"
    assert call("H100")["runs"] == on_gpu["runs"], "nothing left: the same run, nothing recorded"
    assert len(Path(out).read_text().splitlines()) == 6


@pytest.mark.parametrize("planned", [p for p in budget.PLAN if p.step.argv[0] == "-m"
                                     and p.step.argv[1].startswith(steps.MODULE)],
                         ids=lambda p: p.name)
def test_every_planned_experiment_step_parses_as_its_command_line(planned):
    import importlib

    name = planned.step.argv[1]
    module = importlib.import_module(f"{name}.__main__")
    for gpu in (False, True):
        module.COMMAND.parser().parse_args(steps.command(planned.step, "run-1", gpu, python="py")[3:])


def test_a_step_done_with_an_older_instrument_is_recorded_again_in_a_new_run(tmp_path, monkeypatch):
    """A step whose instrument changed (its method number went up) counts as not done: the next
    call records it again, in a new run, and the other steps stay as they were."""
    script = tmp_path / "conditions.py"
    script.write_text(CONDITIONS)
    out = str(tmp_path / "records.txt")
    step = lambda name: steps.Step(name, [str(script), out], resumable=True)  # noqa: E731
    plan = [budget.Planned(step("kept"), 1, (1, 2), "a fake"),
            budget.Planned(step("changed"), 1, (1, 2), "a fake")]
    _fake_plan(monkeypatch, tmp_path, plan)
    state = tmp_path / "run.json"

    def call() -> dict:
        args = budget.parser().parse_args(["--deadline", "120", "--out", str(tmp_path / "o"),
                                           "--state", str(state), "--gpu", "H200"])
        assert budget.run(args, say=lambda *a: None) == 0
        return json.loads(state.read_text())

    first = call()
    assert first["done"]["changed"]["method"] == 1
    assert budget.lacking(first, "H200", 1) == []
    plan[1] = budget.Planned(step("changed"), 1, (1, 2), "a fake", method=2)
    assert [p.name for p in budget.lacking(first, "H200", 1)] == ["changed"]
    second = call()
    assert second["runs"]["kept"] == first["runs"]["kept"]
    assert second["runs"]["changed"] != first["runs"]["changed"], "a new run for the new method"
    assert second["done"]["changed"]["method"] == 2 and budget.lacking(second, "H200", 1) == []


def test_recordings_plan_table_is_the_budgets_plan():
    """recording.md shows the plan as tools/budget.py holds it: each step's lease, estimate and
    basis, in order."""
    text = (ROOT / "recording.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| (\d) \| `([^`]+)` \| (\d+)–(\d+) \| (.+) \|$", text, flags=re.MULTILINE)
    assert rows == [(str(p.lease), p.name, str(p.estimate[0]), str(p.estimate[1]), p.basis)
                    for p in budget.PLAN]
