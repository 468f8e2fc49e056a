"""A GPU run cut short never breaks a page.

A budgeted call on a GPU node can stop at its deadline: a comparison with only its GPU half, a
sweep with some of its cells, a step not started at all. The pages are built here from made-up
results files shaped like that (the lesson's own records, re-labelled as a new run), and must
read as they did before the run: the last complete run stays each page's reference, no
"not recorded yet" stands inside a sentence, a caption or a table, and every figure still has
a run to draw.
"""

import json
import shutil

import pytest
from carpentry import fill_placeholders, result_values, site_values
from conftest import ROOT

from gpulesson.experiments import cnn, matmul, small_models, torch_reference
from gpulesson.records import results
from gpulesson.records.results import NOT_RECORDED, is_gpu

PARTIAL = "20991231T000000Z-cut000"  # sorts after every real run: the newest
PAGES = ["_episodes/05-cpu-vs-gpu.md", "_episodes/06-why-gpus-are-fast.md",
         "_episodes/07-small-models.md", "_episodes/08-pytorch.md",
         "_episodes/10-beyond-one-gpu.md"]
FILES = {"cnn": "cnn-cpu-vs-gpu.jsonl", "matmul": "matmul.jsonl", "mlp": "mlp-cpu-vs-gpu.jsonl",
         "torch": "pytorch-cpu-vs-gpu.jsonl"}


def _read(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _gpu_runs(records) -> set[str]:
    return {r["run_id"] for r in records if is_gpu(r)}


def _as_partial(records):
    return [{**r, "run_id": PARTIAL} for r in records]


def _lesson_with(tmp_path, *, keep_gpu_runs: bool):
    """A copy of the lesson's results, with a made-up GPU run cut short appended to each
    comparison: episode 5's CNN with its GPU half only, episode 6's sweeps with one precision
    of three, episode 7's comparison with its GPU half and its sweep with 10 GPU cells of 16,
    episode 8's PyTorch comparison not started. ``keep_gpu_runs`` False drops the complete GPU
    runs first (the lesson before its first GPU run)."""
    root = tmp_path / "lesson"
    shutil.copytree(ROOT / "results", root / "results")
    shutil.copy(ROOT / "_config.yml", root / "_config.yml")
    for name, cut in (("cnn", lambda rs: [r for r in rs if is_gpu(r)
                                          and r["experiment"] == cnn.EXPERIMENT]),
                      ("matmul", lambda rs: [r for r in rs if is_gpu(r)][:1]),
                      ("mlp", lambda rs: ([r for r in rs if is_gpu(r) and r["part"] == "comparison"]
                                          + [r for r in rs if is_gpu(r) and r["part"] == "sweep"][:10])),
                      ("torch", lambda rs: [])):
        path = root / "results" / FILES[name]
        records = _read(path)
        gpu_runs = _gpu_runs(records)
        assert gpu_runs, f"{path.name}: the made-up run copies the lesson's GPU records"
        newest = [r for r in records if r["run_id"] == sorted(gpu_runs)[-1]]
        kept = records if keep_gpu_runs else [r for r in records if r["run_id"] not in gpu_runs]
        _write(path, kept + _as_partial(cut(newest)))
    return root


def _pages(root):
    values = {**site_values(ROOT), **result_values(root)}
    return {page: fill_placeholders((ROOT / page).read_text(encoding="utf-8"), ROOT, values)
            for page in PAGES}


@pytest.mark.parametrize("keep_gpu_runs", [False, True], ids=["before the first GPU run",
                                                              "after a complete GPU run"])
def test_a_run_cut_short_never_becomes_a_reference(tmp_path, keep_gpu_runs):
    root = _lesson_with(tmp_path, keep_gpu_runs=keep_gpu_runs)
    folder = root / "results"
    chosen = {
        "cnn": cnn.reference_run(folder / FILES["cnn"]),
        "matmul": matmul.latency_run(folder / FILES["matmul"]),  # the runs drawn until a new-method one
        "mlp comparison": small_models.reference_run("comparison", folder / FILES["mlp"]),
        "mlp sweep": small_models.reference_run("sweep", folder / FILES["mlp"]),
        "torch": torch_reference.reference_run(folder / FILES["torch"]),
    }
    for what, run in chosen.items():
        assert run, f"{what}: no reference left to draw"
        assert run[0]["run_id"] != PARTIAL, f"{what}: the run cut short became the reference"
        assert any(not is_gpu(r) for r in run), f"{what}: a reference without its CPU half"
    assert small_models.page.sweep_complete(chosen["mlp sweep"])
    # After a complete GPU run, the comparisons keep it as their reference.
    assert all(any(is_gpu(r) for r in chosen[what]) == keep_gpu_runs
               for what in ("cnn", "matmul", "mlp comparison", "torch"))


@pytest.mark.parametrize("keep_gpu_runs", [False, True], ids=["before the first GPU run",
                                                              "after a complete GPU run"])
def test_the_pages_read_whole_with_a_run_cut_short(tmp_path, keep_gpu_runs):
    pages = _pages(_lesson_with(tmp_path, keep_gpu_runs=keep_gpu_runs))
    for page, text in pages.items():
        broken = [line for line in text.splitlines() if NOT_RECORDED in line]
        assert not broken, f"{page}:\n" + "\n".join(broken)


def test_the_reference_rule_on_made_up_runs(tmp_path):
    """The rule itself, on the smallest runs that show it."""
    def record(run, gpu, **extra):
        return {"experiment": "x", "run_id": run, "device_kind": "gpu" if gpu else "cpu", **extra}

    path = tmp_path / "x.jsonl"
    _write(path, [record("1", False), record("2", False), record("2", True), record("3", True),
                  record("4", False, cells=1)])
    complete = (lambda rs: all(r.get("cells") != 1 for r in rs))  # noqa: E731
    assert results.reference_run(path, "x", complete=complete)[0]["run_id"] == "2"
    _write(path, [record("1", False), record("3", True)])
    assert results.reference_run(path, "x")[0]["run_id"] == "1", "a GPU half never replaces a CPU run"
    _write(path, [record("3", True)])
    assert results.reference_run(path, "x")[0]["run_id"] == "3", "with nothing else, the GPU run"
