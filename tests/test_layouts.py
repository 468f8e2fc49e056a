"""HDF5 storage layouts: what is written, how it is read back, and the comparison's outputs."""

import json
import warnings

import h5py
import matplotlib.pyplot as plt
import numpy as np
import pytest

from gpulesson.datasets.settings import LABELS
from gpulesson.datasets.synthetic import make_synthetic
from gpulesson.experiments import layouts as lay
from gpulesson.records import summaries

LABEL = LABELS["synthetic"]
N = 1000  # not a multiple of the batch size: the last batch is partial
BATCH = 256
BATCH_CHUNKS = (BATCH, 32, 32, 3)
# layout -> (kind of chunks, compression, gzip level)
EXPECTED = {
    "contiguous": (None, None, None),
    "batch chunks": ("batch", None, None),
    "batch chunks + lzf": ("batch", "lzf", None),
    "batch chunks + gzip": ("batch", "gzip", 4),
    "auto chunks + gzip": ("auto", "gzip", 4),
}
ROW_KEYS = {
    "layout", "description", "chunks", "compression", "compression_opts", "file_bytes", "file_mb",
    "write_seconds", "images_per_second", "batch_size", "n_images", "order", "repeats", "path",
    "summary", "warmup",
}


@pytest.fixture(scope="module")
def data():
    (x, y), _ = make_synthetic(N, 0, seed=0, progress=False)
    return x, y


@pytest.fixture(autouse=True)
def close_figures():
    # A missing glyph (e.g. ×) only warns; make it fail the test instead.
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message="Glyph .* missing")
        yield
        for number in plt.get_fignums():
            plt.figure(number).canvas.draw()
    plt.close("all")


def test_the_layouts_are_the_documented_ones():
    assert list(lay.LAYOUTS) == list(EXPECTED) == list(lay.DESCRIPTIONS)
    assert all(lay.DESCRIPTIONS[name].strip() for name in lay.LAYOUTS)
    assert lay.LAYOUTS["auto chunks + gzip"] == {"chunks": True, "compression": "gzip"}
    assert lay.layout_options("batch chunks + gzip") == {
        "chunks": BATCH_CHUNKS, "compression": "gzip", "compression_opts": 4}
    assert lay.layout_options("batch chunks", chunk_rows=64)["chunks"] == (64, 32, 32, 3)
    assert lay.layout_options("batch chunks", (100,), chunk_rows=64)["chunks"] == (64,)
    assert lay.LAYOUTS["batch chunks"]["chunks"] == BATCH_CHUNKS  # not changed by the calls


@pytest.mark.parametrize("layout", list(EXPECTED))
def test_each_layout_round_trips_with_its_chunks_and_compression(tmp_path, data, layout):
    x, y = data
    path = lay.write_layout(tmp_path / "data.h5", x, y, layout)
    assert path == tmp_path / "data.h5"
    kind, compression, level = EXPECTED[layout]
    with h5py.File(path, "r") as f:
        assert f.attrs["layout"] == layout
        np.testing.assert_array_equal(f["x"][()], x)
        np.testing.assert_array_equal(f["y"][()], y)
        assert f["x"].dtype == x.dtype and f["y"].dtype == y.dtype
        for name in ("x", "y"):
            dataset = f[name]
            assert dataset.compression == compression
            if level is not None:
                assert dataset.compression_opts == level
            if kind is None:
                assert dataset.chunks is None
            elif kind == "batch":
                assert dataset.chunks == (BATCH, *dataset.shape[1:])
            else:
                assert dataset.chunks is not None
        if kind == "auto":
            chunks = f["x"].chunks
            # h5py's guess is not one batch of whole images: it cuts across them
            assert chunks[0] != BATCH or chunks[1:] != (32, 32, 3)
            assert np.prod(chunks[1:]) < 32 * 32 * 3


def test_chunk_rows_sets_the_chunk_height(tmp_path, data):
    x, y = data
    for rows, expected in ((100, 100), (5000, N)):  # never more rows than the data has
        path = lay.write_layout(tmp_path / f"rows{rows}.h5", x, y, "batch chunks + lzf", chunk_rows=rows)
        with h5py.File(path, "r") as f:
            assert f["x"].chunks == (expected, 32, 32, 3)
            assert f["y"].chunks == (expected,)
    with pytest.raises(ValueError, match="chunk_rows"):
        lay.write_layout(tmp_path / "bad.h5", x, y, "batch chunks", chunk_rows=0)


def test_h5py_guesses_chunks_that_cut_across_images_for_the_full_data(tmp_path):
    with h5py.File(tmp_path / "in-memory.h5", "w", driver="core", backing_store=False) as f:
        dataset = f.create_dataset("x", shape=(50_000, 32, 32, 3), dtype="uint8",
                                   **lay.LAYOUTS["auto chunks + gzip"])
        chunks = dataset.chunks
    assert list(tmp_path.iterdir()) == []  # nothing was written to disk
    assert chunks == (6250, 4, 4, 1)
    # so one batch of 256 whole images (inside one chunk row range) touches 8 * 8 * 3 chunks
    per_batch = np.prod([size // chunk for size, chunk in zip((32, 32, 3), chunks[1:], strict=True)])
    assert per_batch == 192
    # 19.2 MB of chunks to decompress for 0.8 MB of images, far more than the 1 MiB chunk cache
    assert per_batch * np.prod(chunks) > 10 * 1024**2 > 10 * BATCH * 32 * 32 * 3


def test_compressed_files_are_smaller(tmp_path, data):
    x, y = data
    size = {name: lay.write_layout(tmp_path / f"{i}.h5", x, y, name).stat().st_size
            for i, name in enumerate(lay.LAYOUTS)}
    # the stand-in's pixel noise compresses poorly, but gzip still gains, and LZF gains over
    # the same chunks uncompressed
    assert size["batch chunks + gzip"] < min(size["contiguous"], size["batch chunks"])
    assert size["batch chunks + lzf"] < size["batch chunks"]
    # on compressible images every compressed layout is much smaller
    flat = np.repeat(x[:, :1, :1, :], 32, axis=1).repeat(32, axis=2)  # one colour per image
    size = {name: lay.write_layout(tmp_path / f"flat{i}.h5", flat, y, name).stat().st_size
            for i, name in enumerate(lay.LAYOUTS)}
    for name, (_, compression, _) in EXPECTED.items():
        if compression:
            assert size[name] < size["contiguous"] / 4, name


@pytest.mark.parametrize("order", lay.ORDERS)
def test_every_image_is_read_exactly_once_per_pass(tmp_path, data, order):
    x, y = data
    slices = lay.batch_slices(N, BATCH, order=order, seed=3)
    rows = np.concatenate([np.arange(start, stop) for start, stop in slices])
    np.testing.assert_array_equal(np.sort(rows), np.arange(N))
    assert sorted(stop - start for start, stop in slices) == [N % BATCH] + [BATCH] * (N // BATCH)
    path = lay.write_layout(tmp_path / "data.h5", x, y, "batch chunks")
    seconds, count = lay.read_batches(path, BATCH, order=order, seed=3)
    assert count == N and seconds > 0
    assert lay.read_batches(path, 100, order=order)[1] == N


def test_shuffled_order_is_seeded_and_keeps_contiguous_batches():
    sequential = lay.batch_slices(N, BATCH)
    assert sequential == [(0, 256), (256, 512), (512, 768), (768, 1000)]
    shuffled = lay.batch_slices(10_000, BATCH, order="shuffled", seed=1)
    assert shuffled == lay.batch_slices(10_000, BATCH, order="shuffled", seed=1)
    assert shuffled != lay.batch_slices(10_000, BATCH, order="shuffled", seed=2)
    assert shuffled != lay.batch_slices(10_000, BATCH) and sorted(shuffled) == lay.batch_slices(10_000, BATCH)
    with pytest.raises(ValueError, match="order"):
        lay.batch_slices(N, BATCH, order="random")
    with pytest.raises(ValueError, match="batch_size"):
        lay.batch_slices(N, 0)


def test_compare_layouts_rows_table_and_figure(tmp_path, data):
    x, y = data
    directory = tmp_path / "layouts"
    rows = lay.compare_layouts(x, y, directory, progress=False)
    print("\n" + lay.layout_table(rows))
    assert [r["layout"] for r in rows] == list(lay.LAYOUTS)
    assert list(directory.iterdir()) == []  # files deleted, no temporary files left
    json.loads(json.dumps(rows))
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["description"] == lay.DESCRIPTIONS[row["layout"]]
        assert row["n_images"] == N and row["batch_size"] == BATCH and row["order"] == "shuffled"
        assert row["file_bytes"] > x.nbytes * 0.9 and row["file_mb"] == row["file_bytes"] / 1e6
        assert row["write_seconds"] > 0
        summary = row["summary"]
        assert 0 < summary["min"] <= summary["median"] <= summary["max"]
        assert row["images_per_second"] == pytest.approx(N / summary["median"])
        # the rule: one recorded warm-up pass, then REPEATS timed ones, all kept
        assert row["repeats"] == summaries.REPEATS == len(summary["samples"])
        assert row["warmup"] == summaries.WARMUP == len(summary["warmup"])
        assert row["compression"] == EXPECTED[row["layout"]][1] and row["path"] is None
    by_name = {r["layout"]: r for r in rows}
    assert by_name["contiguous"]["chunks"] is None
    assert by_name["batch chunks"]["chunks"] == list(BATCH_CHUNKS)
    assert by_name["auto chunks + gzip"]["chunks"] not in (None, list(BATCH_CHUNKS))
    # The one timing claim checked: many times slower here, so a factor of 5 is safe.
    medians = {name: row["summary"]["median"] for name, row in by_name.items()}
    assert medians["auto chunks + gzip"] > 5 * medians["batch chunks"]

    table = lay.layout_table(rows)
    assert all(name in table for name in lay.LAYOUTS)
    assert "fastest" in table and "slower" in table and "(256, 32, 32, 3)" in table
    lines = table.splitlines()
    assert len(lines) == 3 + len(rows) and "warm-up" in lines[-1]
    end = lines[0].index(" MB") + len(" MB")  # numbers are right-aligned under it
    for line, row in zip(lines[2:-1], rows, strict=True):
        value = f"{row['file_mb']:.1f}"
        assert line[end - len(value) - 1 : end] == " " + value

    fig = lay.layout_bars(rows, label=LABEL)
    assert LABEL in fig.get_suptitle() and f"{N:,} images" in fig.get_suptitle()
    size_ax, speed_ax = fig.axes
    assert len(size_ax.patches) == len(speed_ax.patches) == len(rows)
    assert len({p.get_hatch() for p in speed_ax.patches}) == len(rows)
    assert [t.get_text() for t in size_ax.get_yticklabels()] == list(lay.LAYOUTS)
    assert len(size_ax.texts) == len(speed_ax.texts) == len(rows)
    assert all(t.get_text().endswith("MB") for t in size_ax.texts)


def _row(layout, seconds):
    summary = summaries.summarise(seconds, [seconds[0]])
    return {"layout": layout, "chunks": None, "compression": None, "file_mb": 1.0,
            "n_images": 1000, "repeats": len(seconds), "warmup": 1, "summary": summary,
            "images_per_second": 1000 / summary["median"],
            "batch_size": 10, "order": "shuffled"}


def test_the_table_says_slower_only_where_the_ranges_are_apart():
    """Episode 9's table once called lzf "2.0× slower" than the fastest layout while the next
    cell timed it faster: its words now come from the rule's comparison."""
    apart = [_row("contiguous", [1.0, 1.1, 1.05]), _row("batch chunks + lzf", [2.0, 2.1, 2.2])]
    assert lay.versus_fastest(apart) == ["fastest", "2× slower"]
    overlapping = [_row("contiguous", [1.0, 1.3, 1.1]), _row("batch chunks + lzf", [1.2, 1.4, 1.25])]
    assert lay.versus_fastest(overlapping) == ["highest median", summaries.NO_DIFFERENCE]
    once = [_row("contiguous", [1.0]), _row("batch chunks + lzf", [2.0])]
    assert lay.versus_fastest(once) == ["highest median", summaries.NO_DIFFERENCE]
    table = lay.layout_table(overlapping)
    assert "slower" not in table and summaries.NO_DIFFERENCE in table and "1.20" not in table


def test_compare_layouts_can_keep_the_files(tmp_path, data):
    x, y = data
    rows = lay.compare_layouts(x[:300], y[:300], tmp_path, layouts=["contiguous", "batch chunks"],
                               batch_size=100, repeats=1, order="sequential", keep=True, progress=False)
    assert [r["layout"] for r in rows] == ["contiguous", "batch chunks"]
    assert rows[1]["chunks"] == [100, 32, 32, 3]  # chunk rows follow the batch size
    assert sorted(p.name for p in tmp_path.iterdir()) == ["layout-batch-chunks.h5", "layout-contiguous.h5"]
    assert rows[0]["path"] == str(tmp_path / "layout-contiguous.h5")


@pytest.mark.bad_input("interrupted write")
def test_an_interrupted_write_leaves_no_file(tmp_path, data, monkeypatch):
    x, y = data
    original = h5py.Group.create_dataset

    def interrupted(self, name, *args, **kwargs):
        if name == "y":  # x is already written
            raise KeyboardInterrupt
        return original(self, name, *args, **kwargs)

    monkeypatch.setattr(h5py.Group, "create_dataset", interrupted)
    target = tmp_path / "data.h5"
    with pytest.raises(KeyboardInterrupt):
        lay.write_layout(target, x, y, "batch chunks + gzip")
    assert list(tmp_path.iterdir()) == []
    # an existing file is left as it was
    monkeypatch.setattr(h5py.Group, "create_dataset", original)
    lay.write_layout(target, x, y, "contiguous")
    monkeypatch.setattr(h5py.Group, "create_dataset", interrupted)
    with pytest.raises(KeyboardInterrupt):
        lay.write_layout(target, x, y, "batch chunks")
    assert list(tmp_path.iterdir()) == [target]
    with h5py.File(target, "r") as f:
        assert f.attrs["layout"] == "contiguous" and len(f["y"]) == N


@pytest.mark.bad_input("bad argument")
def test_unknown_layouts_are_refused(tmp_path, data):
    x, y = data
    for call in (
        lambda: lay.write_layout(tmp_path / "data.h5", x, y, "gzip"),
        lambda: lay.layout_options("gzip"),
        lambda: lay.compare_layouts(x, y, tmp_path, layouts=["contiguous", "gzip"], progress=False),
    ):
        with pytest.raises(ValueError, match="unknown layout 'gzip'") as error:
            call()
        assert all(repr(name) in str(error.value) for name in lay.LAYOUTS)
    assert list(tmp_path.iterdir()) == []  # refused before writing anything
    with pytest.raises(ValueError, match="same number"):
        lay.write_layout(tmp_path / "data.h5", x, y[:10], "contiguous")
    with pytest.raises(ValueError):
        lay.layout_table([])
    with pytest.raises(ValueError):
        lay.layout_bars([], label=LABEL)
