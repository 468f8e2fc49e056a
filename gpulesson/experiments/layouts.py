"""How the HDF5 storage layout (chunking, compression) changes file size and batch read speed:
the same images written once per layout of :data:`LAYOUTS`, read back batch by batch as a
training generator reads them. HDF5 reads, and decompresses, every chunk a slice touches: one
or two chunks of whole batches, but 192 of h5py's guess (``chunks=True``: (6250, 4, 4, 1) for
(50000, 32, 32, 3) uint8), more than its 1 MiB chunk cache keeps for the next batch.
"""

import re
import time
from pathlib import Path

import numpy as np

from gpulesson.datasets.hdf5 import IMAGE_SHAPE, atomic_hdf5
from gpulesson.records import summaries
from gpulesson.records.figkit import panels, title
from gpulesson.records.summaries import REPEATS, SUMMARY_KEY, WARMUP, as_rate, compare, rank, summarise

CHUNK_ROWS = 256  # the lesson's training batch size, and so its chunk height
MB = 1_000_000  # file sizes are reported in MB (10^6 bytes), like `ls -lh --si` and file browsers
ORDERS = ("sequential", "shuffled")

# name -> h5py ``create_dataset`` keyword arguments; a tuple ``chunks`` means "whole batches" of
# the dataset's own shape (:func:`layout_options`), so the labels get chunks of the same rows.
LAYOUTS: dict[str, dict] = {
    "contiguous": {"chunks": None, "compression": None},
    "batch chunks": {"chunks": (CHUNK_ROWS, *IMAGE_SHAPE), "compression": None},
    "batch chunks + lzf": {"chunks": (CHUNK_ROWS, *IMAGE_SHAPE), "compression": "lzf"},
    "batch chunks + gzip": {"chunks": (CHUNK_ROWS, *IMAGE_SHAPE), "compression": "gzip",
                            "compression_opts": 4},
    "auto chunks + gzip": {"chunks": True, "compression": "gzip"},
}
DESCRIPTIONS: dict[str, str] = {
    "contiguous": "one block of bytes, no chunks, no compression",
    "batch chunks": "chunks of whole batches of images, no compression (the lesson's files)",
    "batch chunks + lzf": "batch chunks compressed with LZF (fast, smaller gain)",
    "batch chunks + gzip": "batch chunks compressed with gzip level 4 (smaller, slower to unpack)",
    "auto chunks + gzip": "h5py's guessed chunk shape + gzip, as many tutorials do: chunks cut across images",
}
_BAR_STYLES = (("tab:blue", "//"), ("tab:orange", ".."), ("tab:green", "xx"), ("tab:purple", "\\\\"),
               ("tab:red", "--"), ("tab:brown", "oo"), ("tab:gray", "++"))  # (colour, hatch)


def _check_whole(name: str, value, least: int) -> None:
    if int(value) != value or value < least:
        raise ValueError(f"{name} must be a whole number >= {least}, not {value!r}")


def layout_options(layout: str, shape=None, *, chunk_rows: int = CHUNK_ROWS) -> dict:
    """The ``create_dataset`` keyword arguments of ``layout`` for a dataset of ``shape``
    (default one image): batch chunks hold ``chunk_rows`` rows, or all rows if fewer."""
    if layout not in LAYOUTS:
        known = ", ".join(repr(name) for name in LAYOUTS)
        raise ValueError(f"unknown layout {layout!r}: choose one of {known}")
    _check_whole("chunk_rows", chunk_rows, 1)
    options = dict(LAYOUTS[layout])
    if isinstance(options.get("chunks"), tuple):
        shape = (int(chunk_rows), *IMAGE_SHAPE) if shape is None else tuple(shape)
        options["chunks"] = (min(int(chunk_rows), shape[0]), *shape[1:])
    return options


def write_layout(path, x, y, layout: str, *, chunk_rows: int = CHUNK_ROWS) -> Path:
    """Write datasets ``x`` and ``y`` to ``path`` with ``layout``, atomically; the path. Each
    array is written in one call, so HDF5 fills (and compresses) every chunk once."""
    x, y = np.asarray(x), np.asarray(y)
    if x.ndim < 2 or y.ndim != 1 or len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x and y need the same number (> 0) of rows, not {x.shape} and {y.shape}")
    options = {name: layout_options(layout, a.shape, chunk_rows=chunk_rows)
               for name, a in (("x", x), ("y", y))}
    path = Path(path).expanduser()
    with atomic_hdf5(path) as f:
        f.attrs["layout"] = layout
        for name, array in (("x", x), ("y", y)):
            f.create_dataset(name, data=array, **options[name])
    return path


def batch_slices(n: int, batch_size: int, *, order: str = "sequential", seed: int = 0):
    """The ``(start, stop)`` rows of one pass over ``n`` rows; "shuffled" shuffles the order of
    the batches (seeded), not the rows in them, as a generator reading an HDF5 file does."""
    if order not in ORDERS:
        raise ValueError(f"order must be one of {', '.join(ORDERS)}, not {order!r}")
    _check_whole("batch_size", batch_size, 1)
    starts = np.arange(0, int(n), int(batch_size))
    if order == "shuffled":
        np.random.default_rng(seed).shuffle(starts)
    return [(int(start), min(int(start) + int(batch_size), int(n))) for start in starts]


def read_batches(path, batch_size: int, *, order: str = "sequential", seed: int = 0) -> tuple[float, int]:
    """``(seconds, images read)`` of one pass over ``path`` in :func:`batch_slices` order; the
    clock runs over the batch reads only, the file open."""
    import h5py

    with h5py.File(Path(path).expanduser(), "r") as f:
        x, y = f["x"], f["y"]
        if len(x) != len(y):
            raise ValueError(f"{path}: x has {len(x)} rows but y has {len(y)}")
        slices = batch_slices(len(x), batch_size, order=order, seed=seed)
        count, start_time = 0, time.perf_counter()
        for start, stop in slices:
            images, _labels = x[start:stop], y[start:stop]
            count += len(images)
        seconds = time.perf_counter() - start_time
    return seconds, count


def compare_layouts(x, y, directory, *, batch_size: int = CHUNK_ROWS, layouts=None,
                    repeats: int = REPEATS, order: str = "shuffled", keep: bool = False,
                    progress: bool = True) -> list[dict]:
    """One JSON-ready row per layout: ``x, y`` written to ``directory`` in chunks of
    ``batch_size`` rows (deleted after unless ``keep``), then the rule's warm-up and ``repeats``
    passes reading them in batches. The page cache holds the file just written: the times are
    HDF5's own work (finding chunks, decompressing, copying)."""
    import h5py
    from tqdm.auto import tqdm

    layouts = list(LAYOUTS if layouts is None else layouts)
    for layout in layouts:
        layout_options(layout)  # an unknown layout before any work
    _check_whole("repeats", repeats, 1)
    batch_slices(0, batch_size, order=order)  # check batch_size and order before any work
    rows = []
    for layout in tqdm(layouts, desc="Comparing layouts", unit="layout", disable=not progress):
        slug = re.sub(r"[^a-z0-9]+", "-", layout.lower()).strip("-")  # layout-batch-chunks-lzf.h5
        path = Path(directory).expanduser() / f"layout-{slug}.h5"
        try:
            start = time.perf_counter()
            write_layout(path, x, y, layout, chunk_rows=batch_size)
            write_seconds = time.perf_counter() - start
            with h5py.File(path, "r") as f:
                dataset = f["x"]
                chunks = None if dataset.chunks is None else [int(c) for c in dataset.chunks]
                compression, level = dataset.compression, dataset.compression_opts
                n_images = len(dataset)
            size = path.stat().st_size
            times = []
            # the same batch orders for every layout; the warm-up passes come first
            for repeat in range(WARMUP + int(repeats)):
                seconds, count = read_batches(path, batch_size, order=order, seed=repeat)
                if count != n_images:
                    raise RuntimeError(f"{path}: read {count} images of {n_images}")
                times.append(seconds)
            summary = summarise(times[WARMUP:], times[:WARMUP])
        finally:
            if not keep:
                path.unlink(missing_ok=True)
        rows.append({
            "layout": layout, "description": DESCRIPTIONS[layout], "chunks": chunks,
            "compression": compression, "compression_opts": level if level is None else int(level),
            "file_bytes": int(size), "file_mb": size / MB, "write_seconds": write_seconds,
            SUMMARY_KEY: summary,
            "images_per_second": n_images / summary["median"] if summary["median"] > 0 else None,
            "batch_size": int(batch_size), "n_images": int(n_images), "order": order,
            "repeats": int(repeats), "warmup": WARMUP, "path": str(path) if keep else None,
        })
    return rows


def read_rate(row) -> dict:
    """A row's read throughput (images/s) as a summary of its timed passes."""
    return as_rate(row[SUMMARY_KEY], row["n_images"])


def versus_fastest(rows) -> list[str]:
    """Each row's read speed against the highest median in the rule's words: "fastest" (alone
    in first place), "highest median" (first place shared), "2.0× slower", "no measurable
    difference"."""
    rates = [read_rate(r) for r in rows]
    first = rank(dict(enumerate(rates)), higher_is_better=True)[0]
    best = max(range(len(rows)), key=lambda i: rates[i]["median"])
    return [("fastest" if len(first) == 1 else "highest median") if i == best
            else compare(rate, rates[best], higher_is_better=True).sentence
            for i, rate in enumerate(rates)]


def layout_table(rows) -> str:
    """The rows of :func:`compare_layouts` as a plain-text table with aligned columns."""
    rows = list(rows)
    if not rows:
        raise ValueError("layout_table needs at least one row")
    header = ("layout", "chunks", "compression", "MB", "images/s", "range", "vs fastest")
    body = []
    for r, word in zip(rows, versus_fastest(rows), strict=True):
        level, rate = r.get("compression_opts"), read_rate(r)
        body.append((str(r["layout"]),
                     "contiguous" if r.get("chunks") is None else str(tuple(r["chunks"])),
                     (r.get("compression") or "none") + ("" if level is None else f" {level}"),
                     f"{r['file_mb']:.1f}",
                     f"{r['images_per_second']:,.0f}" if r.get("images_per_second") else "n/a",
                     "1 repeat" if rate["n"] < 2 else f"{rate['min']:,.0f}–{rate['max']:,.0f}",
                     word))
    widths = [max(len(line[i]) for line in (header, *body)) for i in range(len(header))]
    right = {3, 4, 5}  # numbers are right-aligned

    def line(cells):
        return "  ".join(c.rjust(w) if i in right else c.ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths, strict=True))).rstrip()

    first = rows[0]
    note = (f"median of {first.get('repeats')} timed reads after {first.get('warmup', 0)} "
            "warm-up; ranges that overlap are no measurable difference")
    return "\n".join([line(header), line(["-" * w for w in widths]), *map(line, body), note])


def _short_number(value, _position=None) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:g}{suffix}"
    return f"{value:g}"


def layout_bars(rows, *, label):
    """File size and read throughput per layout; each bar has its value and its own hatch, so
    the figure reads the same without colour."""
    from matplotlib.ticker import MaxNLocator

    rows = list(rows)
    if not rows:
        raise ValueError("layout_bars needs at least one row")
    words = versus_fastest(rows)
    positions = np.arange(len(rows))
    fig, axes = panels(2, (12, 1.0 + 0.6 * len(rows) + 1.2), across=True, sharey=True)
    sides = (
        (axes[0], "file_mb", "file size (MB)", lambda r: f"{r['file_mb']:.3g} MB"),
        (axes[1], "images_per_second", "read throughput (images/s, higher is faster)",
         lambda r: ", ".join(filter(None, (f"{r['images_per_second'] or 0:,.0f} images/s",
                                           words[rows.index(r)])))),
    )
    for ax, key, xlabel, text in sides:
        bars = ax.barh(positions, [r.get(key) or 0.0 for r in rows], edgecolor="black")
        for i, (bar, row) in enumerate(zip(bars, rows, strict=True)):
            colour, hatch = _BAR_STYLES[i % len(_BAR_STYLES)]
            bar.set_facecolor(colour)
            bar.set_hatch(hatch)
            ax.annotate(text(row), (bar.get_width(), bar.get_y() + bar.get_height() / 2), xytext=(3, 0),
                        textcoords="offset points", ha="left", va="center", fontsize=8)
        if key == "images_per_second":
            summaries.draw_spread(ax, list(positions), [read_rate(r) for r in rows], horizontal=True)
            xlabel += f"\n{summaries.SPREAD_NOTE}"
        ax.set_xlabel(xlabel)
        ax.xaxis.set_major_formatter(_short_number)  # 1.5M, not an "1e6" offset
        ax.xaxis.set_major_locator(MaxNLocator(5, steps=[1, 2, 5, 10]))
        ax.set_xlim(left=0)
        ax.margins(x=0.45)
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(positions, [str(r["layout"]) for r in rows])
    axes[0].invert_yaxis()  # first layout on top (the axes share y)
    first = rows[0]
    detail = (f"batch size {first.get('batch_size')}, {first.get('n_images', 0):,} images, "
              f"{first.get('order')} batch order; median of {first.get('repeats')} reads after "
              f"{first.get('warmup', 0)} warm-up, file in the page cache")
    title(fig, "HDF5 layout: file size and batch read speed", label, detail, fontsize="large")
    fig.tight_layout()
    return fig
