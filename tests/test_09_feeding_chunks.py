"""Episode 9's chunk shapes and chunk cache (gpulesson.experiments.feeding.measure): the files have
the chunks they say, the cache is the one asked for and only inside its block, the records are
the benchmark's own loader rows of their group, and the page shows them as a table."""

import numpy as np
import pytest
from feeding_helpers import BATCH, do_nothing_model, write_records

from gpulesson import lesson
from gpulesson.experiments import feeding
from gpulesson.experiments.feeding import measure, page
from gpulesson.experiments.feeding import pipelines as fp
from gpulesson.experiments.feeding.pipelines import file_info, write_lesson_file
from gpulesson.lesson import core
from gpulesson.records import summaries

N = 8 * BATCH  # two chunks of a window


def _arrays(n=N):
    rng = np.random.default_rng(0)
    return rng.integers(0, 256, (n, 32, 32, 3), dtype=np.uint8), np.arange(n) % 10


def _cache_bytes(batches) -> int:
    batches[0]
    return batches._file.id.get_access_plist().get_cache()[2]


def test_the_files_have_the_chunks_they_say_and_the_cache_is_the_one_asked_for(tmp_path):
    x, y = _arrays()
    path = tmp_path / "chunks.h5"
    write_lesson_file(path, x, y, chunk_rows=4 * BATCH, compression="lzf")
    info = file_info(path)
    assert info["chunks"] == [4 * BATCH, 32, 32, 3] and info["compression"] == "lzf"
    default = _cache_bytes(lesson.HDF5Batches(path, "train", BATCH))
    with fp.chunk_cache(64):
        assert _cache_bytes(lesson.HDF5Batches(path, "train", BATCH)) == 64 * fp.MIB
    assert core.h5py.File is __import__("h5py").File  # restored after the block
    assert default < 64 * fp.MIB
    with pytest.raises(RuntimeError, match="inside"), fp.chunk_cache(64):
        raise RuntimeError("inside")
    assert core.h5py.File is __import__("h5py").File  # restored after an error too
    # Every image is read once an epoch, whatever the layout.
    budget = fp.time_reading(path, BATCH, cache_mib=64, warmup=1, repeats=2)
    assert len(budget.seconds) == 3 and all(s > 0 for s in budget.seconds)


def test_the_benchmark_records_each_layout_once_as_a_loader_row_of_its_group(tmp_path,
                                                                              monkeypatch):
    monkeypatch.setattr(measure, "build_model", do_nothing_model)
    out = tmp_path / "f.jsonl"
    made = feeding.run_benchmark(devices=["cpu"], pipelines=["ram"], batch_size=BATCH,
                                 n_images=N, repeats=summaries.QUICK_REPEATS, chunks=True,
                                 data_dir=tmp_path / "data", progress=lambda line: None)
    write_records(out, made)
    rows = [r for r in made if r["group"] == measure.GROUP]
    assert [r["layout"] for r in rows] == list(measure.CHUNKS)
    assert [r["chunks"][0] for r in rows] == [b * BATCH for b, _, _ in measure.CHUNKS.values()]
    assert [r["cache_bytes"] for r in rows] == [None, None, None, 64 * fp.MIB]
    assert {(r["pipeline"], r["mode"], r["device_kind"], r["window"]) for r in rows} == {
        ("lesson", "loader", "cpu", fp.WINDOW)}
    assert len({measure.RECORDS.key(r) for r in rows}) == len(rows)
    # the pipelines' table and its choices never read them
    assert measure.find(made, "cpu", "lesson", "loader") is None
    # a run that goes on measures none of them again
    again = feeding.run_benchmark(devices=["cpu"], pipelines=["ram"], batch_size=BATCH,
                                  n_images=N, repeats=summaries.QUICK_REPEATS, chunks=True,
                                  data_dir=tmp_path / "data", run_id=made[0]["run_id"],
                                  earlier=made, progress=lambda line: None)
    assert again == []
    said = page.chunks_text(out)
    assert f"(run {made[0]['run_id']}), the generator read alone, a window of 4 blocks:" in said
    assert "| chunks of 4 blocks, lzf, 64 MiB cache | " in said
    assert "--chunks` records them" in page.chunks_text(tmp_path / "none.jsonl")
