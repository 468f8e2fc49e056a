"""A synthetic, CIFAR-shaped stand-in for CIFAR-10, for machines that cannot download it.

It is only ever used when chosen explicitly (``LESSON_DATA=synthetic``) and is always labelled
"synthetic stand-in (not CIFAR-10)", with class names that are not CIFAR's, so that its results
cannot be mistaken for CIFAR-10 results.

The images are 32x32 RGB uint8, 10 balanced classes. Each class is a family of patterns:

====  ===================  ===================================================
 0    horizontal stripes   sine grating, orientation near 0 degrees
 1    vertical stripes     sine grating, near 90 degrees
 2    rising diagonal      sine grating, near 45 degrees (stripes like /)
 3    falling diagonal     sine grating, near 135 degrees (stripes like \\)
 4    checkerboard         product of two gratings
 5    rings                concentric rings around a random centre
 6    blob                 one soft round blob at a random position
 7    dots                 several small dots at random positions
 8    square               a filled square at a random position and size
 9    cross                a horizontal and a vertical bar crossing
====  ===================  ===================================================

Each image draws a random frequency, phase, position, contrast and brightness, a colour that
only leans towards its class' tint, a background colour and gradient, and pixel noise. So the
classes are learnable (a small CNN gets well above chance within a minute on a CPU) but not
trivially (it does not reach 100 % after one epoch), which makes learning curves look like
learning.

Generation is deterministic: the same seed gives the same bytes. It is vectorised numpy in
chunks of :data:`CHUNK` images, each chunk with its own random stream, so a small set is exactly
the start of a larger one made with the same seed (the quick-mode data are the first images of
the full-size data).
"""

from __future__ import annotations

import numpy as np

SYNTHETIC_CLASS_NAMES = (
    "horizontal stripes",
    "vertical stripes",
    "rising diagonal stripes",
    "falling diagonal stripes",
    "checkerboard",
    "rings",
    "blob",
    "dots",
    "square",
    "cross",
)
N_CLASSES = len(SYNTHETIC_CLASS_NAMES)
SIZE = 32
CHUNK = 1000  # images generated at a time (a multiple of N_CLASSES)

# Tunable difficulty (checked by tests/test_data_synthetic.py: learnable, not trivial).
NOISE_STD = 28.0  # pixel noise, in grey levels
CONTRAST = (0.25, 1.0)  # pattern amplitude relative to the full range
TINT_WEIGHT = (0.0, 0.5)  # how much the colour leans towards the class tint
ANGLE_JITTER = 12.0  # degrees of random rotation of the gratings

# A tint per class (RGB, 0..1). It only biases the colour, it does not determine it.
_TINTS = np.array(
    [
        [1.0, 0.3, 0.3],
        [0.3, 1.0, 0.3],
        [0.3, 0.3, 1.0],
        [1.0, 1.0, 0.3],
        [1.0, 0.3, 1.0],
        [0.3, 1.0, 1.0],
        [1.0, 0.6, 0.2],
        [0.6, 0.2, 1.0],
        [0.2, 0.6, 0.6],
        [0.8, 0.8, 0.8],
    ]
)
_GRATING_ANGLES = {0: 0.0, 1: 90.0, 2: 45.0, 3: 135.0}

_yy, _xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / SIZE  # coordinates in [0, 1)


def _u(rng, n, low, high):
    """n uniform numbers shaped (n, 1, 1), to broadcast over the pixel grid."""
    return rng.uniform(low, high, size=(n, 1, 1)).astype(np.float32)


def _grating(rng, n, angle):
    theta = np.deg2rad(angle + rng.uniform(-ANGLE_JITTER, ANGLE_JITTER, size=(n, 1, 1)))
    freq = _u(rng, n, 2.0, 6.0)  # cycles per image
    phase = _u(rng, n, 0.0, 2 * np.pi)
    # The sine varies across the stripes: at 0 degrees along y (horizontal stripes), at 90
    # degrees along x (vertical); y points down, so 45 degrees rises to the right.
    along = _yy * np.cos(theta) + _xx * np.sin(theta)
    return np.sin(2 * np.pi * freq * along + phase)


def _checkerboard(rng, n):
    freq = _u(rng, n, 1.5, 4.0)
    px, py = _u(rng, n, 0, 2 * np.pi), _u(rng, n, 0, 2 * np.pi)
    return np.sign(np.sin(2 * np.pi * freq * _xx + px) * np.sin(2 * np.pi * freq * _yy + py))


def _radius(rng, n, margin=0.15):
    cx, cy = _u(rng, n, margin, 1 - margin), _u(rng, n, margin, 1 - margin)
    return np.sqrt((_xx - cx) ** 2 + (_yy - cy) ** 2)


def _rings(rng, n):
    freq = _u(rng, n, 3.0, 7.0)
    return np.sin(2 * np.pi * freq * _radius(rng, n, 0.3) + _u(rng, n, 0, 2 * np.pi))


def _blob(rng, n):
    sigma = _u(rng, n, 0.08, 0.2)
    return 2 * np.exp(-(_radius(rng, n, 0.2) ** 2) / (2 * sigma**2)) - 1


def _dots(rng, n, count=5):
    out = np.zeros((n, SIZE, SIZE), np.float32)
    for _ in range(count):
        out = np.maximum(out, np.exp(-(_radius(rng, n, 0.08) ** 2) / (2 * 0.035**2)))
    return 2 * out - 1


def _square(rng, n):
    half = _u(rng, n, 0.12, 0.3)
    cx, cy = _u(rng, n, 0.3, 0.7), _u(rng, n, 0.3, 0.7)
    inside = (np.abs(_xx - cx) < half) & (np.abs(_yy - cy) < half)
    return np.where(inside, 1.0, -1.0).astype(np.float32)


def _cross(rng, n):
    width = _u(rng, n, 0.05, 0.12)
    cx, cy = _u(rng, n, 0.25, 0.75), _u(rng, n, 0.25, 0.75)
    bars = (np.abs(_xx - cx) < width) | (np.abs(_yy - cy) < width)
    return np.where(bars, 1.0, -1.0).astype(np.float32)


_PATTERNS = {4: _checkerboard, 5: _rings, 6: _blob, 7: _dots, 8: _square, 9: _cross}


def _pattern(rng, label, n):
    """n patterns of class ``label``, values in [-1, 1], shape (n, 32, 32)."""
    if label in _GRATING_ANGLES:
        return _grating(rng, n, _GRATING_ANGLES[label])
    return _PATTERNS[label](rng, n)


def _chunk(seed: int, split: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`CHUNK` images and labels of one chunk, from a random stream of its own."""
    rng = np.random.default_rng([seed, split, index])
    n = CHUNK
    # Every run of 10 labels holds each class once, so any prefix is balanced to within one.
    blocks = np.tile(np.arange(N_CLASSES, dtype=np.uint8), (n // N_CLASSES, 1))
    labels = rng.permuted(blocks, axis=1).ravel()
    pattern = np.empty((n, SIZE, SIZE), np.float32)
    for label in range(N_CLASSES):
        where = np.flatnonzero(labels == label)
        if where.size:
            pattern[where] = _pattern(rng, label, where.size)

    # Colour: a random direction that leans towards the class tint by a random amount.
    weight = rng.uniform(*TINT_WEIGHT, size=(n, 1))
    colour = (1 - weight) * rng.uniform(0.2, 1.0, size=(n, 3)) + weight * _TINTS[labels]
    contrast = rng.uniform(*CONTRAST, size=(n, 1, 1, 1)) * 127.0
    background = rng.uniform(60, 190, size=(n, 1, 1, 3))
    slope = rng.normal(0, 30, size=(n, 1, 1, 2))
    gradient = slope[..., :1] * (_xx[..., None] - 0.5) + slope[..., 1:] * (_yy[..., None] - 0.5)

    image = background + gradient + contrast * pattern[..., None] * colour[:, None, None, :]
    image += rng.normal(0, NOISE_STD, size=image.shape).astype(np.float32)
    return np.clip(image, 0, 255).astype(np.uint8), labels


def _split(seed: int, split: int, n: int, desc: str, progress: bool):
    from tqdm.auto import tqdm  # lazy: only needed while generating

    x = np.empty((n, SIZE, SIZE, 3), np.uint8)
    y = np.empty((n,), np.uint8)
    with tqdm(total=n, desc=desc, unit="img", disable=not progress) as bar:
        for index, start in enumerate(range(0, n, CHUNK)):
            stop = min(start + CHUNK, n)
            # A last, partial chunk is made whole and cut, so that a small set is exactly the
            # start of a larger one with the same seed (quick mode = first images of full size).
            images, labels = _chunk(seed, split, index)
            x[start:stop], y[start:stop] = images[: stop - start], labels[: stop - start]
            bar.update(stop - start)
    return x, y


def make_synthetic(n_train: int, n_test: int, seed: int = 0, progress: bool = True):
    """Make the stand-in as ``((x_train, y_train), (x_test, y_test))``, like ``load_cifar10``.

    x is uint8 (N, 32, 32, 3), y uint8 (N,) with classes 0..9 (see
    :data:`SYNTHETIC_CLASS_NAMES`), balanced to within one image per class. Training and test
    images come from different random streams of the same seed.
    """
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if int(n) != n or n < 0:
            raise ValueError(f"{name} must be a whole number >= 0, not {n!r}")
    train = _split(seed, 0, int(n_train), "synthetic train", progress)
    test = _split(seed, 1, int(n_test), "synthetic test", progress)
    return train, test
