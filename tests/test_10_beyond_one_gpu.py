"""Episode 10, "Beyond one GPU": its figures, the commands it shows, the numbers it types.

The episode shows shell commands (sbatch, python -m gpulesson....) that the notebook does not
run. These tests make sure each still exists: every job script it names is in jobs/, every
``python -m gpulesson.<module> [subcommand]`` answers ``--help``, and every option the episode
passes appears in that help. The numbers of the all-reduce exercise are typed into the text;
they are checked against the cost model that computes them.
"""

import re
import shlex
import subprocess
import sys
from functools import cache

import pytest
from conftest import ROOT, load_script

from gpulesson.experiments import parallel, sweep

EPISODE = ROOT / "_episodes" / "10-beyond-one-gpu.md"
FIG = ROOT / "fig" / "10-beyond-one-gpu"
TEXT = EPISODE.read_text(encoding="utf-8")
# Which command each job script passes its arguments to.
JOB_TARGETS = {
    "jobs/train-cnn.sbatch": ("gpulesson.experiments.train_job", None),
    "jobs/sweep-array.sbatch": ("gpulesson.experiments.train_job", None),
    "jobs/train-multi-node.sbatch": ("gpulesson.experiments.parallel", "train"),
    "jobs/train-torch-ddp.sbatch": ("gpulesson.experiments.torch_ddp", None),
}


# --- figures ------------------------------------------------------------------------------------

def figure_script(name):
    return load_script(FIG / name)


def test_committed_figures_are_what_the_script_draws(tmp_path):
    drawn = figure_script("parallelism.py").draw(tmp_path)
    assert [p.name for p in drawn] == ["data-parallel.svg", "model-parallel.svg", "job-array.svg"]
    for path in drawn:
        committed = FIG / path.name
        assert committed.exists(), f"{committed} is missing: run the script in {FIG}"
        assert path.read_bytes() == committed.read_bytes(), (
            f"{committed.name} is not what its script draws: python {FIG / 'parallelism.py'}")
        assert f"../fig/10-beyond-one-gpu/{path.name}" in TEXT, f"{path.name} is not shown"


def test_the_job_array_figure_shows_the_sweeps_grid(tmp_path):
    script = figure_script("parallelism.py")

    def texts(path):
        return path.read_text().count('<g id="text_')

    full = texts(script.job_array(tmp_path / "full.svg"))
    # Three labels per task (its number, its parameters, its folder): a smaller grid in
    # gpulesson.experiments.sweep would draw fewer tasks.
    script.GRID_POINTS = sweep.GRID_POINTS[:2]
    assert full - texts(script.job_array(tmp_path / "two.svg")) == 3 * (len(sweep.GRID_POINTS) - 2)


# --- the commands the episode shows ----------------------------------------------------------

def shown_commands(text: str) -> list[str]:
    """Shell commands of the ```bash blocks (continuations joined) and of inline code."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        block = block.replace("\\\n", " ")
        for line in block.splitlines():
            line = re.sub(r"\s#.*$", "", line).strip()
            if line and not line.startswith("#"):
                commands.append(line)
    commands += re.findall(r"`([^`\n]*(?:python -m gpulesson|sbatch )[^`\n]*)`", text)
    return commands


def invocations(text: str):
    """``(module, subcommand or None, [options], command)`` for every command the text shows."""
    found = []
    for command in shown_commands(text):
        words = shlex.split(command.replace("<", "").replace(">", ""))
        if "sbatch" in words:
            scripts = [w for w in words if w.startswith("jobs/")]
            assert len(scripts) == 1, f"which job script does this run? {command}"
            script = scripts[0]
            module, sub = JOB_TARGETS.get(script, (None, None))
            rest = words[words.index(script) + 1:]
            found.append((script, module, sub, [w for w in rest if w.startswith("--")], command))
        elif ("python" in words or "torchrun" in words) and "-m" in words and words[
                words.index("-m") + 1].startswith("gpulesson"):
            module = words[words.index("-m") + 1]
            rest = words[words.index("-m") + 2:]
            sub = rest[0] if rest and not rest[0].startswith("-") else None
            found.append((None, module, sub, [w for w in rest if w.startswith("--")], command))
    return found


@cache
def help_text(module: str, sub: str | None) -> str:
    args = [sys.executable, "-m", module] + ([sub] if sub else []) + ["--help"]
    result = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, f"{' '.join(args[1:])} failed:\n{result.stderr[-2000:]}"
    return result.stdout


def test_the_episode_shows_the_commands_it_teaches():
    found = invocations(TEXT)
    scripts = {script for script, *_ in found if script}
    assert scripts == set(JOB_TARGETS), scripts
    modules = {(module, sub) for script, module, sub, *_ in found if not script}
    assert {("gpulesson.experiments.parallel", "train"), ("gpulesson.experiments.parallel", "cost"),
            ("gpulesson.experiments.sweep", "list"), ("gpulesson.experiments.sweep", "gather"),
            ("gpulesson.experiments.sweep", "params"), ("gpulesson.experiments.train_job", None),
            ("gpulesson.experiments.torch_ddp", None), ("gpulesson.datasets.prepare", None)} <= modules


def test_every_job_script_shown_exists_and_runs_what_the_episode_says():
    for script, (module, sub) in JOB_TARGETS.items():
        text = (ROOT / script).read_text()
        assert f"-m {module}" + (f" {sub}" if sub else "") in text, script


def test_every_command_shown_answers_help_and_knows_its_options():
    for script, module, sub, options, command in invocations(TEXT):
        if script:
            assert (ROOT / script).is_file(), f"{script} does not exist ({command})"
        if module is None:
            continue
        text = help_text(module, sub)
        if sub is None:
            assert not re.search(r"\[-h\]\s+\{", text), f"{module} needs a subcommand: {command}"
        for option in options:
            name = option.split("=")[0]
            assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text), (
                f"{command}: {module} {sub or ''} has no option {name}")


def test_a_wrong_option_would_be_caught():
    # The check above must be able to fail: an option the command does not have.
    fake = "```bash\npython -m gpulesson.experiments.sweep gather results --no-such-option\n```\n"
    [(_, module, sub, options, _)] = invocations(fake)
    assert (module, sub, options) == ("gpulesson.experiments.sweep", "gather", ["--no-such-option"])
    assert "--no-such-option" not in help_text(module, sub)
    with pytest.raises(AssertionError, match="which job script"):
        invocations("```bash\nsbatch --wrap 'hostname'\n```\n")


def test_no_code_cell_runs_a_shell_command():
    cells = re.findall(r"^```\{code-cell\} ipython3\n(.*?)^```", TEXT, flags=re.S | re.M)
    assert cells
    for cell in cells:
        assert not re.search(r"^\s*!|subprocess|os\.system|sbatch\(", cell, flags=re.M), cell


# --- the numbers typed into the text -------------------------------------------------------------

def test_the_all_reduce_solution_matches_the_cost_model():
    ethernet = parallel.INTERCONNECTS["10 Gb/s Ethernet"]
    nvlink = parallel.INTERCONNECTS["NVLink 4 (H200 SXM)"]
    assert f"({ethernet:g} GB/s)" in TEXT and f"({nvlink:g} GB/s)" in TEXT
    for count in (parallel.LESSON_CNN_PARAMETERS, parallel.RESNET50_PARAMETERS):
        assert f"{count:,} parameters" in TEXT

    def ms(n, link):
        return parallel.allreduce_seconds(n, 8, link) * 1e3

    cnn, resnet = parallel.LESSON_CNN_PARAMETERS, parallel.RESNET50_PARAMETERS
    expected = [
        f"{parallel.ring_allreduce_bytes(cnn, 8) / 1e6:.1f} MB per GPU",
        f"{ms(cnn, ethernet):.1f} ms over Ethernet",
        f"{ms(cnn, nvlink):.3f} ms over NVLink",
        f"{parallel.ring_allreduce_bytes(resnet, 8) / 1e6:.1f} MB per GPU",
        f"{ms(resnet, ethernet):.1f} ms over\n  Ethernet",
        f"{ms(resnet, nvlink):.2f} ms over NVLink",
        f"9 × {ms(resnet, ethernet):.1f} ms ≈ {9 * ms(resnet, ethernet) / 1e3:.1f} s",
    ]
    for text in expected:
        assert text in TEXT, f"the solution should say {text!r}"
    with_latency = parallel.link_allreduce_seconds(cnn, 8, "NVLink 4 (H200 SXM)")
    assert f"over NVLink takes\n{with_latency * 1e3:.3f} ms, more than five times" in TEXT
    assert 5 < with_latency / (ms(cnn, nvlink) / 1e3) < 6


def test_the_all_reduce_is_latency_plus_bandwidth_with_nccls_latencies():
    """A ring all-reduce over N GPUs waits for 2 (N - 1) steps' latencies besides its bytes:
    a few megabytes over NVLink are latency-bound, ResNet-50's gradients over Ethernet are
    bandwidth-bound; one GPU exchanges nothing."""
    cnn, resnet = parallel.LESSON_CNN_PARAMETERS, parallel.RESNET50_PARAMETERS
    nvlink, ethernet = "NVLink 4 (H200 SXM)", "10 Gb/s Ethernet"
    latency = (8.4 + 2 * 7 * 3.4) / 1e6  # NCCL: base, and 14 steps of 3.4 µs over NVLink
    assert parallel.link_latency_seconds(8, nvlink) == pytest.approx(latency)
    bandwidth = parallel.ring_allreduce_bytes(cnn, 8) / (450e9)
    assert parallel.link_allreduce_seconds(cnn, 8, nvlink) == pytest.approx(latency + bandwidth)
    assert parallel.link_allreduce_seconds(cnn, 1, nvlink) == 0.0
    rows = {(r.model, r.interconnect, r.n_gpus): r for r in parallel.cost_table(
        {"cnn": (cnn, 3.0), "resnet": (resnet, 16.0)})}
    assert rows["cnn", nvlink, 8].bound == "latency"
    assert rows["cnn", nvlink, 8].latency_ms == pytest.approx(latency * 1e3)
    assert rows["resnet", ethernet, 8].bound == "bandwidth"
    assert "bound" in parallel.format_cost_table(list(rows.values())).splitlines()[0]
    assert "tuning.cc" in parallel.LATENCY_SOURCE
    links = parallel.STEP_LATENCY_US
    said = (f"{parallel.ALLREDUCE_BASE_US:g} µs per all-reduce, and per step "
            f"{links[nvlink]:g} µs over NVLink, {links['PCIe Gen5 x16 (H200)']:g} µs over PCIe "
            f"and {links[ethernet]:g} µs over a network")
    assert said in " ".join(TEXT.split())  # the page's latencies are the model's
    with pytest.raises(ValueError, match="unknown link"):
        parallel.link_allreduce_seconds(cnn, 8, "carrier pigeon")


def test_resnet50s_step_is_its_published_arithmetic_at_the_cards_matrix_rate(tmp_path):
    """Not the CNN's host-bound step: 3.8e9 multiply-adds an image (He et al. 2016), 2
    operations each, 3 passes, at the best float32 rate of episode 6's GPU sweep; without a
    GPU sweep, an assumed step that says so."""
    import json

    from gpulesson.experiments.parallel import page

    assert parallel.resnet50_step_ms(256, 100.0) == pytest.approx(256 * 3 * 2 * 3.8e9 / 1e14 * 1e3)
    assert "He et al." in parallel.RESNET50_SOURCE and "Table 1" in parallel.RESNET50_SOURCE
    n, seconds = 8192, 2 * 8192**3 / 400e12  # 400 TFLOP/s
    sweep = {"experiment": "matmul", "run_id": "m1", "device_kind": "gpu", "dtype": "float32",
             "device": "Made-up GPU", "method": "amortised", "date": "2026-01-01T00:00:00+00:00",
             "points": [{"n": n, "seconds": [seconds] * 3, "median_seconds": seconds}]}
    cpu = {**sweep, "device_kind": "cpu", "device": "CPU"}
    (tmp_path / "matmul.jsonl").write_text(json.dumps(cpu) + "\n" + json.dumps(sweep) + "\n")
    step, source = page.resnet_step([cpu, sweep])
    assert step == pytest.approx(parallel.resnet50_step_ms(256, 400.0))
    assert "Made-up GPU" in source and "run m1" in source and "lower bound" in source
    assert page.resnet_step([cpu]) == (page.ASSUMED_RESNET_STEP_MS,
                                       "assumed, not a measurement: no GPU run of episode 6")
    cnn_file = tmp_path / "cnn-cpu-vs-gpu.jsonl"
    cnn_file.write_text("")
    values = page.substitutions(cnn_file)
    assert values["ref_par_resnet_step"] == f"{step:.3g} ms"
    assert values["ref_par_nvlink"].endswith("of it latency")


def test_the_efficiency_solution_matches_the_cost_model():
    """The solution's numbers, as the page shows them, follow the cost model for the step the
    page names (the lesson's GPU run, or the assumed one)."""
    import carpentry

    from gpulesson.experiments import cnn
    from gpulesson.experiments.parallel.page import cnn_step

    step_ms, _ = cnn_step(cnn.reference_run())
    seconds = [parallel.link_allreduce_seconds(parallel.LESSON_CNN_PARAMETERS, n,
                                               "10 Gb/s Ethernet") for n in (2, 4, 8)]
    efficiency = [parallel.scaling_efficiency(step_ms / 1e3, s) for s in seconds]
    ms = ", ".join(f"{s * 1e3:.2g}" for s in seconds[:2]) + f" and {seconds[2] * 1e3:.2g} ms"
    percent = [f"{e * 100:.0f} %" for e in efficiency]
    speedup = [f"{n * e:.1f}" for n, e in zip((2, 4, 8), efficiency, strict=True)]
    text = " ".join(carpentry.fill_placeholders(TEXT, ROOT).split())
    assert f"steps of {step_ms:.3g} ms: all-reduce {ms} (latency included) on 2, 4 and 8 GPUs" \
        in text
    assert f"efficiency {percent[0]}, {percent[1]} and {percent[2]}" in text
    assert f"a speed-up of {speedup[0]}, {speedup[1]} and {speedup[2]}" in text


def test_the_learning_rate_solution_matches_the_rule():
    rate = parallel.scaled_learning_rate(1e-3, parallel.global_batch_size(256, 4), 256)
    assert f"4 × 0.001 =\n{rate:g}" in TEXT


def test_the_text_agrees_with_the_job_scripts_and_the_grid():
    last = len(sweep.GRID_POINTS) - 1
    array = (ROOT / "jobs" / "sweep-array.sbatch").read_text()
    assert f"#SBATCH --array=0-{last}\n" in array
    assert f"`#SBATCH --array=0-{last}`" in TEXT and f"--array=0-{last}%2" in TEXT
    assert "task *i* of the array" in TEXT and "Six tasks" in TEXT and len(sweep.GRID_POINTS) == 6
    train = (ROOT / "jobs" / "train-cnn.sbatch").read_text()
    assert "#SBATCH --signal=B:USR1@120" in train and "#SBATCH --requeue" in train
    assert "`#SBATCH --signal=B:USR1@120`" in TEXT
    limit = re.search(r"LESSON_MAX_REQUEUES:-(\d+)", train).group(1)
    assert f"gives up after {limit}\n  requeues" in TEXT


# --- the PyTorch route --------------------------------------------------------------------------

DDP = ROOT / "gpulesson" / "experiments" / "torch_ddp"


def shown_excerpts(text: str, module: str) -> list[list[str]]:
    """The ```python blocks introduced by "(lines from `module`)", as stripped lines."""
    blocks = re.findall(rf"\(lines from `{re.escape(module)}`\):\n\n```python\n(.*?)^```",
                        text, flags=re.S | re.M)
    return [[line.strip() for line in block.splitlines() if line.strip()] for block in blocks]


def is_excerpt(lines: list[str], source: str) -> bool:
    """Whether ``lines`` ("..." for what is left out) appear in ``source`` in this order."""
    source_lines = iter(line.strip() for line in source.splitlines())
    return all(line == "..." or any(line == s for s in source_lines) for line in lines)


@pytest.mark.parametrize("module", ["command.py", "training.py"])
def test_the_ddp_code_shown_is_the_code_that_runs(module):
    [lines] = shown_excerpts(TEXT, module)
    source = (DDP / module).read_text()
    assert is_excerpt(lines, source), f"the episode's excerpt of {module} is not in it"
    # The check can fail: a changed line, or two lines swapped.
    assert not is_excerpt([*lines, "loss.backward(retain_graph=True)"], source)
    assert not is_excerpt(lines[::-1], source)


def test_the_parameter_server_numbers_match_the_cost_model():
    ethernet = parallel.INTERCONNECTS["10 Gb/s Ethernet"] * 1e9
    resnet = parallel.RESNET50_PARAMETERS
    server = parallel.parameter_server_bytes(resnet, 8)
    ring = parallel.ring_allreduce_bytes(resnet, 8)
    text = " ".join(TEXT.split())
    assert (f"the server receives {server / 1e6:.1f} MB per step, {server / ethernet * 1e3:.1f} ms; "
            f"the ring sends {ring / 1e6:.1f} MB per GPU, {ring / ethernet * 1e3:.1f} ms") in text
    assert parallel.parameter_server_bytes(100, 4) == 4 * 100 * 4


def test_the_ddp_exercise_matches_the_sampler():
    from gpulesson.experiments.torch_ddp.training import make_sampler

    padded = [len(make_sampler(10, 4, r)) for r in range(4)]
    dropped = [len(make_sampler(10, 4, r, drop_last=True)) for r in range(4)]
    assert padded == [3] * 4 and dropped == [2] * 4
    text = " ".join(TEXT.split())
    assert "pads to 12: each process reads 3, and 2 samples are read twice" in text
    assert "With `--drop-last` each reads 2, and 2 samples are left out" in text
    assert "256 each" in text and len(make_sampler(512, 2, 0)) == 256
    rate = parallel.scaled_learning_rate(0.01, parallel.global_batch_size(32, 2), 64)
    assert f"the learning rate stays {rate:g}" in text


def test_the_cost_model_takes_the_measured_step_or_says_it_assumes_one(tmp_path):
    import json

    from gpulesson.experiments.parallel import page

    path = tmp_path / "cnn-cpu-vs-gpu.jsonl"
    cpu = {"experiment": "cnn-cpu-vs-gpu", "run_id": "1", "device_kind": "cpu", "n_train": 45_000,
           "batch_size": 256, "epoch_seconds": [30.0, 20.0, 21.0, 19.0]}
    path.write_text(json.dumps(cpu) + "\n")
    values = page.substitutions(path)
    assert values["ref_par_step"] == "20 ms" and "assumed" in values["ref_par_step_source"]
    gpu = {**cpu, "device_kind": "gpu", "device": "NVIDIA H200",
           "epoch_seconds": [9.0, 0.176, 0.352, 0.170]}  # median 0.176 s over 176 steps: 1 ms
    path.write_text(json.dumps(cpu) + "\n" + json.dumps(gpu) + "\n")
    values = page.substitutions(path)
    assert values["ref_par_step"] == "1 ms" and "measured on NVIDIA H200" in values["ref_par_step_source"]
    assert values["ref_par_eth_efficiency"].startswith("28 %")  # 1 / (1 + 2.52 + 0.04) ms, 2 GPUs
    assert values["ref_par_eth_verdict"].startswith("From 2 GPUs on")
