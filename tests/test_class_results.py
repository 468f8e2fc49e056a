"""A workshop's runs shared in a class folder (gpulesson.classroom.share) and read back and drawn
(gpulesson.classroom.results, gpulesson.classroom.figure).

Every run here is made up inside the test (labelled so in the figure's title); nothing is
written to results/.
"""

import json
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT

from gpulesson.classroom import figure as class_figure
from gpulesson.classroom import results as class_results
from gpulesson.classroom import share as class_share
from gpulesson.records.results import append_record, make_record, read_records
from gpulesson.records.summaries import summarise

MADE_UP = "made-up test data"
WRITERS = 40


def record(kind="cpu", *, model="Made-up CPU", epochs=(9.0, 5.0, 5.5, 5.2), run_id="20260101T000000Z-abcdef",
           data="synthetic", n_train=2000, batch_size=64, cores=4):
    environment = {"date": "2026-01-01T00:00:00+00:00", "cpu_model": "Made-up CPU",
                   "cores_usable": cores, "cores_total": cores, "backend": "jax",
                   "device": "CPU" if kind == "cpu" else model, "gpu_count": int(kind == "gpu")}
    if kind == "cpu":
        environment["cpu_model"] = model
    extra = {"gpu": {"name": model}} if kind == "gpu" else {}
    return make_record(class_share.EXPERIMENT, data=data, environment=environment, run_id=run_id,
                       device_kind=kind, n_train=n_train, batch_size=batch_size,
                       epoch_seconds=list(epochs), summary=summarise(epochs[1:], epochs[:1]),
                       **extra)


def run(cpu=5.0, gpu=0.5, gpu_model="Made-up GPU", **kwargs):
    records = [record("cpu", epochs=(2 * cpu, cpu, cpu * 1.05, cpu * 0.98), **kwargs)]
    if gpu is not None:
        records.append(record("gpu", model=gpu_model,
                              epochs=(10 * gpu, gpu, gpu * 1.02, gpu * 0.99), **kwargs))
    return records


# --- sharing ---------------------------------------------------------------------------------

def test_a_shared_run_holds_the_records_the_nickname_and_nothing_else(tmp_path):
    records = run()
    path = class_share.write_run(records, tmp_path, nickname="  Ada ")
    document = json.loads(path.read_text())
    assert set(document) == {"format", "format_version", "nickname", "shared", "records"}
    assert document["records"] == records and document["nickname"] == "Ada"
    assert path.parent == tmp_path and path.suffix == ".json"
    assert [p.name for p in tmp_path.iterdir()] == [path.name], "no temporary file is left"
    anonymous = class_share.write_run(records, tmp_path)
    assert json.loads(anonymous.read_text())["nickname"] is None
    assert anonymous != path, "the same run shared twice gets two files, none overwritten"


@pytest.mark.bad_input("bad argument")
@pytest.mark.parametrize("nickname", ["x" * 41, "two\nlines", 42])
def test_a_bad_nickname_is_refused_before_anything_is_written(tmp_path, nickname):
    with pytest.raises(ValueError, match="nickname"):
        class_share.write_run(run(), tmp_path, nickname=nickname)
    assert not list(tmp_path.iterdir())


def test_the_environment_variable_wins_over_the_site_value(tmp_path):
    assert class_share.class_folder("/site/class", {}) == Path("/site/class")
    assert class_share.class_folder("/site/class", {class_share.CLASS_ENV: str(tmp_path)}) == tmp_path
    assert class_share.class_folder("", {class_share.CLASS_ENV: " "}) is None


def _write(folder, index, start, run_id):
    start.wait()
    class_share.write_run(run(cpu=5.0 + index, run_id=run_id), folder, nickname=f"learner {index}")


def test_forty_learners_share_at_once_and_a_reader_sees_only_whole_runs(tmp_path):
    context = multiprocessing.get_context("fork")
    start = context.Barrier(WRITERS + 1)
    # One run id for all: the names must still differ, or runs would overwrite each other.
    writers = [context.Process(target=_write, args=(tmp_path, i, start, "20260101T000000Z-same"))
               for i in range(WRITERS)]
    for process in writers:
        process.start()
    start.wait()
    skipped, seen = [], []
    while any(process.is_alive() for process in writers):
        seen.append(len(class_results.gather(tmp_path, say=skipped.append)))
    for process in writers:
        process.join()
        assert process.exitcode == 0
    runs = class_results.gather(tmp_path, say=skipped.append)
    assert skipped == [], "the reader saw a torn or partial file"
    assert seen == sorted(seen), "a run the reader had seen disappeared"
    assert len(runs) == WRITERS
    assert sorted(r.nickname for r in runs) == sorted(f"learner {i}" for i in range(WRITERS))
    assert sorted(r.records[0]["summary"]["median"] for r in runs) == [
        run(cpu=5.0 + i)[0]["summary"]["median"] for i in range(WRITERS)]
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_a_reader_in_the_middle_of_a_write_sees_nothing_of_it(tmp_path, monkeypatch):
    seen, lines = [], []
    flush = os.fsync

    def read_while_writing(descriptor):
        flush(descriptor)  # the whole file is written, under its temporary name
        seen.append(class_results.gather(tmp_path, say=lines.append))

    monkeypatch.setattr(class_share.os, "fsync", read_while_writing)
    path = class_share.write_run(run(), tmp_path)
    assert seen == [[]] and lines == []
    assert [r.path for r in class_results.gather(tmp_path)] == [path]


@pytest.mark.bad_input("unwritable folder")
@pytest.mark.parametrize("problem", ["missing", "a file", "unwritable"])
def test_a_folder_that_cannot_take_the_run_says_so_and_the_own_record_is_kept(
        tmp_path, monkeypatch, problem):
    mine = tmp_path / "my-results.jsonl"
    records = run()
    for r in records:
        append_record(mine, r)
    folder = tmp_path / "class"
    if problem == "a file":
        folder.write_text("not a folder")
    elif problem == "unwritable":
        folder.mkdir()
        real_open = os.open

        def refuse(path, *args, **kwargs):
            if Path(path).parent == folder:
                raise PermissionError(13, "Permission denied", str(path))
            return real_open(path, *args, **kwargs)

        monkeypatch.setattr(class_share.os, "open", refuse)
    lines = []
    assert class_share.share_run(records, folder, kept=mine, say=lines.append) is None
    expected = {"missing": "does not exist", "a file": "is not a folder",
                "unwritable": "Permission denied"}[problem]
    assert len(lines) == 1 and expected in lines[0] and str(folder) in lines[0]
    assert f"your records are kept in {mine}" in lines[0]
    assert read_records(mine) == records
    with pytest.raises(class_share.ClassFolderError, match=expected):
        class_share.write_run(records, folder)
    if folder.is_dir():
        assert not list(folder.iterdir()), "nothing half-written is left"


@pytest.mark.bad_input("unwritable folder")
def test_an_unprivileged_learner_cannot_write_a_folder_of_others(tmp_path):
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None:
        pytest.skip("needs root and setpriv to run the writer as another user")
    base = Path(tempfile.mkdtemp(prefix="gpulesson-class-"))
    try:
        folder = base / "class"
        folder.mkdir()
        base.chmod(0o755)
        folder.chmod(0o755)  # the instructor's, writable by the owner (root) alone
        data = base / "run.json"
        data.write_text(json.dumps(run()))
        data.chmod(0o644)
        code = ("import json, sys; from gpulesson.classroom.share import share_run; "
                "sys.exit(0 if share_run(json.load(open(sys.argv[1])), sys.argv[2]) is None else 3)")
        result = subprocess.run([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                                 sys.executable, "-c", code, str(data), str(folder)],
                                cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                                capture_output=True, text=True, timeout=120, check=False)
        if result.returncode not in (0, 3) and "import" in result.stderr.lower():
            pytest.skip(f"the unprivileged user cannot run the lesson's Python: {result.stderr[-200:]}")
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Not shared: cannot write to the class folder" in result.stdout
        assert not list(folder.iterdir())
    finally:
        shutil.rmtree(base)


# --- reading back ------------------------------------------------------------------------------

def _good(folder: Path) -> Path:
    return class_share.write_run(run(), folder, nickname="good")


BAD_FILES = {
    "truncated": ("truncated file", lambda good: good.read_bytes()[: len(good.read_bytes()) // 2],
                  "cut short"),
    "random bytes": ("corrupt file", lambda good: bytes(range(256)) * 4, "damaged"),
    "empty": ("truncated file", lambda good: b"", "cut short"),
    "foreign JSON": ("corrupt file", lambda good: b'{"hello": "world"}', "not a class run file"),
    "a results file": ("corrupt file", lambda good: json.dumps(run()[0]).encode(),
                       "not a class run file"),
    "future version": ("corrupt file", lambda good: json.dumps(
        {**json.loads(good.read_text()), "format_version": class_share.FORMAT_VERSION + 1}
    ).encode(), "newer version"),
    "bad record": ("corrupt file", lambda good: json.dumps(
        {**json.loads(good.read_text()), "records": [{**run()[0], "epoch_seconds": [-1, -2],
                                                      "summary": None}]}).encode(),
                   "epoch times"),
    "other experiment": ("corrupt file", lambda good: json.dumps(
        {**json.loads(good.read_text()), "records": [{**run()[0], "experiment": "matmul"}]}
    ).encode(), "not of 'cnn-cpu-vs-gpu'"),
    "no records": ("corrupt file", lambda good: json.dumps(
        {**json.loads(good.read_text()), "records": []}).encode(), "no records"),
}


@pytest.mark.parametrize("name", [pytest.param(name, marks=pytest.mark.bad_input(kind))
                                  for name, (kind, _, _) in sorted(BAD_FILES.items())])
def test_a_bad_file_is_skipped_with_one_line_naming_it(tmp_path, name):
    _, content, reason = BAD_FILES[name]
    good = _good(tmp_path)
    bad = tmp_path / "run-bad.json"
    bad.write_bytes(content(good))
    lines = []
    runs = class_results.gather(tmp_path, say=lines.append)
    assert [r.path for r in runs] == [good]
    assert len(lines) == 1 and str(bad) in lines[0] and reason in lines[0], lines


@pytest.mark.bad_input("corrupt file")
def test_other_entries_of_the_folder_are_named_and_temporary_files_passed_over(tmp_path):
    good = _good(tmp_path)
    (tmp_path / "notes.txt").write_text("bring coffee")
    (tmp_path / "subfolder").mkdir()
    (tmp_path / ".run-x.part").write_text('{"format": "gpulesson-cl')
    lines = []
    assert [r.path for r in class_results.gather(tmp_path, say=lines.append)] == [good]
    assert sorted(lines) == [f"Skipped {tmp_path / 'notes.txt'}: not a class run file (its name "
                             "does not end in .json)", f"Skipped {tmp_path / 'subfolder'}: not a file"]


@pytest.mark.bad_input("missing file")
@pytest.mark.parametrize("problem", ["missing", "a file", "unreadable"])
def test_a_folder_that_cannot_be_read_gives_a_clear_message(tmp_path, monkeypatch, capsys, problem):
    folder = tmp_path / "class"
    if problem == "a file":
        folder.write_text("")
    elif problem == "unreadable":
        folder.mkdir()
        _good(folder)

        def refuse(self):
            raise PermissionError(13, "Permission denied", str(self))

        monkeypatch.setattr(class_results.Path, "iterdir", refuse)
    expected = {"missing": "does not exist", "a file": "is not a folder",
                "unreadable": "Permission denied"}[problem]
    with pytest.raises(class_share.ClassFolderError, match=expected):
        class_results.gather(folder)
    lines = []
    assert class_results.show_class(folder=folder, reference=[], say=lines.append) is None
    assert len(lines) == 1 and expected in lines[0] and str(folder) in lines[0]
    assert class_results.main([str(folder), "--out", str(tmp_path / "f.png")]) == 2
    assert expected in capsys.readouterr().err
    assert not (tmp_path / "f.png").exists()


# --- the class's figure ------------------------------------------------------------------------

def made_up_class(folder: Path) -> list[dict]:
    """A class of mixed devices, made up for the test; returns a made-up reference run."""
    for i, (cpu, gpu, model) in enumerate([
            (30.0, 2.0, "NVIDIA A100-SXM4-40GB"), (32.0, 2.2, "NVIDIA A100-SXM4-40GB"),
            (28.0, 1.2, "NVIDIA H100 80GB HBM3"), (31.0, 6.0, "NVIDIA A100 MIG 1g.5gb"),
            (45.0, None, "")]):
        class_share.write_run(run(cpu=cpu, gpu=gpu, gpu_model=model, run_id=f"r{i}"), folder)
    class_share.write_run(run(cpu=60.0, gpu=3.0, cores=2, run_id="other", n_train=50_000), folder)
    # Overlapping CPU and GPU epochs: no measurable difference.
    class_share.write_run([record("cpu", epochs=(9, 5, 6, 7)),
                           record("gpu", model="Made-up slow GPU", epochs=(9, 5.5, 6.5, 7.5))], folder)
    return run(cpu=29.0, gpu=1.5, gpu_model="NVIDIA H100 80GB HBM3", run_id="reference")


def test_the_class_figure_shows_every_device_and_marks_the_reference(tmp_path):
    reference = made_up_class(tmp_path)
    lines = []
    fig = class_results.show_class(folder=tmp_path, reference=reference, note=MADE_UP,
                                   say=lines.append)
    text = "\n".join(lines)
    assert "6 run(s)" in text and "1 run(s) with other data or sizes left out" in text
    assert "measurable in 0 of 1" in text and "the lesson's reference run" in text
    left, right = fig.axes[:2]
    assert [t.get_text() for t in left.get_yticklabels()] == [
        "Made-up CPU (4 cores)", "Made-up slow GPU", "NVIDIA A100 MIG 1g.5gb",
        "NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3"]
    assert len(right.get_yticklabels()) == 4
    assert MADE_UP in fig._suptitle.get_text() and "synthetic stand-in" in fig._suptitle.get_text()
    for ax in (left, right):
        assert ax.get_xlabel() and ax.get_title()
        assert [t.get_text() for t in ax.get_legend().get_texts()] == ["the lesson's reference run"]
    for model in ("NVIDIA A100 MIG 1g.5gb", "NVIDIA H100 80GB HBM3", "Made-up CPU (4 cores)"):
        assert model in fig.alt_text
    assert "Star: the lesson's reference run" in fig.alt_text
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_the_nicknames_are_listed(tmp_path):
    made_up_class(tmp_path)
    class_share.write_run(run(cpu=33.0, gpu=2.5, gpu_model="NVIDIA A100-SXM4-40GB"), tmp_path,
                          nickname="Ada")
    lines = []
    fig = class_results.show_class(folder=tmp_path, reference=[], note=MADE_UP, say=lines.append)
    assert "Shared by: Ada and 6 without a nickname" in "\n".join(lines)
    import matplotlib.pyplot as plt

    plt.close(fig)


def test_a_reference_of_other_sizes_is_not_drawn_and_the_words_say_so(tmp_path):
    made_up_class(tmp_path)
    view = class_figure.class_view(class_results.gather(tmp_path), run(n_train=50_000))
    assert not view.reference and not any(p.reference for p in view.points)
    assert "is not drawn" in class_figure.describe(view)


def test_the_command_draws_the_class_and_says_what_it_skipped(tmp_path, capsys):
    folder = tmp_path / "class"
    folder.mkdir()
    made_up_class(folder)
    (folder / "run-cut.json").write_text('{"format": "gpulesson-class-run", "rec')
    out = tmp_path / "class.png"
    assert class_results.main([str(folder), "--out", str(out), "--no-reference"]) == 0
    printed = capsys.readouterr().out
    assert f"Skipped {folder / 'run-cut.json'}" in printed and "Alt text: Two dot plots" in printed
    assert out.read_bytes().startswith(b"\x89PNG")


def test_an_empty_class_folder_draws_nothing_and_says_so(tmp_path):
    lines = []
    assert class_results.show_class(folder=tmp_path, reference=[], say=lines.append) is None
    assert lines == ["The class folder holds no run yet."]
