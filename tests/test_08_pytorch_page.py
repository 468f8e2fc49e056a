"""Episode 8's page beside its records and its notebooks: what the reference run was against the
learner's notebook (its epochs, the GPU it names, the environment it ran in), and the "Fill in
the loop" exercise, whose loaders are made by a cell of the notebooks. The records here are test
fixtures in tmp_path, or the committed results file read as it is."""

import json
import re

import pytest
from conftest import ROOT
from test_08_pytorch import made_up_gpu, record  # noqa: F401 (a fixture)

from gpulesson.experiments import torch_reference
from gpulesson.experiments.torch_reference import page
from gpulesson.machine.pinned import pinned_environment
from gpulesson.records.results import NOT_RECORDED, append_record, read_records

EPISODE = ROOT / "_episodes" / "08-pytorch.md"
RESULTS = ROOT / "results" / "pytorch-cpu-vs-gpu.jsonl"


def test_the_note_says_how_many_epochs_the_notebook_trains_against_the_reference(tmp_path,
                                                                                  made_up_gpu):  # noqa: F811
    """The epochs of the notebook, read from the episode's EPOCHS, against the reference run's."""
    path = tmp_path / "runs.jsonl"
    assert page.substitutions(path)["ref_torch_notebook_work"] == NOT_RECORDED
    epochs = int(re.search(r"^EPOCHS = settings\.epochs\((\d+)\)", EPISODE.read_text(), re.M)[1])
    other = (4.0,) + (2.0,) * epochs  # one epoch more than the notebook trains
    for r in (record("cpu", "b", epochs=other), record("cuda", "b", epochs=other)):
        append_record(path, r)
    assert page.substitutions(path)["ref_torch_notebook_work"] == (
        f"the notebook's cells train {epochs} epochs on each device, not the reference run's "
        f"{epochs + 1}, and load the data first")
    same = tmp_path / "same.jsonl"
    append_record(same, record("cpu", "c", epochs=(4.0,) + (2.0,) * (epochs - 1)))
    assert page.substitutions(same)["ref_torch_notebook_work"] == (
        f"the notebook's cells train the same {epochs} epochs on each device, and load the data "
        "first")


def test_the_reference_run_says_which_environment_it_ran_in(tmp_path):
    pins = pinned_environment()
    records = torch_reference.reference_run(RESULTS)
    gpu = next(r for r in records if r["device_kind"] == "gpu")
    text = page.substitutions(RESULTS)["ref_torch_environment"]
    versions = gpu["versions"]
    if versions["torch"].split("+")[0] == pins["torch"] and versions["python"].startswith(pins["python"]):
        assert text.startswith("The reference run ran in the lesson's pinned environment"), text
    else:
        assert text == (
            "The reference run ran in the node's own Python environment, not the lesson's pinned "
            f"one: Python {versions['python']}, PyTorch {versions['torch']}, CUDA "
            f"{gpu['gpu']['cuda_runtime_version']}, where the lesson pins Python {pins['python']}, "
            f"PyTorch {pins['torch']}.")
    # A record made in the pinned versions says so.
    pinned = tmp_path / "pinned.jsonl"
    mine = {**read_records(RESULTS)[-1], "versions": {"python": f"{pins['python']}.7",
                                                      "torch": f"{pins['torch']}+cu132"}}
    mine.pop("gpu", None)
    pinned.write_text(json.dumps(mine) + "\n")
    assert page.substitutions(pinned)["ref_torch_environment"] == (
        f"The reference run ran in the lesson's pinned environment (Python {pins['python']}.7, "
        f"PyTorch {pins['torch']}+cu132).")


def test_the_page_names_the_gpu_the_environment_and_the_notebooks_own_work():
    text = EPISODE.read_text(encoding="utf-8")
    note = " ".join(text[text.index("**Timings.**"):text.index("**Optional software.**")].split())
    assert "the notebook's cells do the same work" not in note
    assert "on the GPU ({{ ref_torch_gpu }}){{ endif }}; {{ ref_torch_notebook_work }}." in note
    timings = text[text.index("## Reference timings"):text.index("{{ if ref_torch_gpu }}\n|")]
    assert "{{ ref_torch_environment }}" in timings


def _cells(path):
    return [c for c in json.loads(path.read_text(encoding="utf-8"))["cells"] if c["cell_type"] == "code"]


def test_the_fill_in_the_loop_exercise_has_its_loaders_in_both_notebooks():
    """The exercise's loaders come from a cell before it, made as train_on makes them; the
    learner's notebook has the blanks, the complete one the answer, in the same place."""
    complete = _cells(ROOT / "notebooks" / "08-pytorch.ipynb")
    learner = _cells(ROOT / "notebooks" / "learner" / "08-pytorch.ipynb")
    at = next(i for i, c in enumerate(learner) if "".join(c["source"]).startswith(
        'device = torch.device(') and "____" in "".join(c["source"]))
    loaders = "".join(learner[at - 1]["source"])
    assert loaders == "".join(complete[at - 1]["source"])
    train_on = next("".join(c["source"]) for c in complete if "def train_on(" in "".join(c["source"]))
    for call in ("train_loader = batches(train_set, ", "test_loader = batches(test_set, 1000)"):
        assert call in loaders and call in train_on
    assert "shuffle=True" in loaders and "generator=" in loaders
    answer = "".join(complete[at]["source"])
    assert "____" not in answer and ".to(device)" in answer and "loss.item()" in answer
    assert "for images, labels in train_loader:" in answer
    assert "for images, labels in test_loader:" in answer


def test_the_loaders_and_the_answer_run(capsys):
    """The two cells of the complete notebook, on a few made-up images."""
    torch = pytest.importorskip("torch")
    from gpulesson.lesson import torch as lesson

    complete = _cells(ROOT / "notebooks" / "08-pytorch.ipynb")
    at = next(i for i, c in enumerate(complete) if "".join(c["source"]).startswith(
        'device = torch.device("cuda" if torch.cuda.is_available()'))
    rng = torch.Generator().manual_seed(1)
    images = (torch.rand(96, 28, 28, generator=rng) * 255).to(torch.uint8).numpy()
    labels = torch.randint(0, 10, (96,), generator=rng).numpy()
    namespace = {"torch": torch, "nn": torch.nn, "batches": lesson.batches,
                 "SmallCNN": lesson.SmallCNN, "BATCH_SIZE": 32,
                 "train_set": lesson.to_dataset(images[:64], labels[:64], 0.5, 0.3),
                 "test_set": lesson.to_dataset(images[64:], labels[64:], 0.5, 0.3)}
    for cell in complete[at - 1:at + 1]:
        exec("".join(cell["source"]), namespace)  # the lesson's own cells
    out = capsys.readouterr().out
    assert "2 training batches, 1 test batches" in out
    assert "last loss:" in out and "test accuracy:" in out
