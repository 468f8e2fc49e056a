"""A synthetic, CIFAR-shaped stand-in for CIFAR-10, used only when chosen (``LESSON_DATA=synthetic``)
and always labelled so. Ten balanced classes in five families of two that differ in one subtle
attribute, each drawn around its class' value with a spread (:data:`SEPARATION`) so that no model
gets every image right. The pairs: 0/1 stripes leaning left and stripes leaning right (tilt), 2/3
fine checks and coarse checks (square size), 4/5 few spots and many spots (count), 6/7 wide box and
tall box (aspect ratio), 8/9 thin cross and thick cross (bar width). Tints, colours, clutter,
occlusion and noise make the CNN learn slowly (``python -m gpulesson.experiments.calibration``
measures it: record it again after any change). Each chunk of :data:`CHUNK` images has its own
random stream.
"""

import numpy as np

SYNTHETIC_CLASS_NAMES = ("stripes leaning left", "stripes leaning right", "fine checks",
                         "coarse checks", "few spots", "many spots", "wide box", "tall box",
                         "thin cross", "thick cross")
N_CLASSES = len(SYNTHETIC_CLASS_NAMES)
N_FAMILIES = N_CLASSES // 2  # class 2k and 2k + 1 form family k
PAIRS = tuple((2 * k, 2 * k + 1) for k in range(N_FAMILIES))
SIZE = 32
CHUNK = 1000  # images generated at a time (a multiple of N_CLASSES)

# Difficulty, calibrated with the lesson's CNN (gpulesson/calibration.py, its results file).
SEPARATION = 0.6  # class attribute at -/+ this many spreads: the overlap makes images ambiguous
NOISE_STD = 24.0  # pixel noise, in grey levels
CONTRAST = (0.2, 1.0)  # pattern amplitude, relative to half the range
CLUTTER = (0.2, 0.5)  # amplitude of another family's pattern, relative to the class pattern
OCCLUDED = 0.3  # share of the images with an occluder
TINT_WEIGHT = (0.2, 0.7)  # how far the background leans towards its family's tint

# A background tint per family (RGB grey levels); both classes of a pair share it.
_TINTS = np.array([[190, 80, 80], [80, 170, 80], [80, 100, 190], [180, 170, 70], [160, 80, 170]],
                  np.float32)

_yy, _xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32) / SIZE  # coordinates in [0, 1)


def _u(rng, n, low, high):
    """n uniform numbers shaped (n, 1, 1), to broadcast over the pixel grid."""
    return rng.uniform(low, high, size=(n, 1, 1)).astype(np.float32)


def _col(t):
    """An attribute per image, shaped (n, 1, 1)."""
    return np.asarray(t, np.float32).reshape(-1, 1, 1)


# Each family draws n patterns, values in [-1, 1], shape (n, 32, 32), from the attribute t of
# each image: about -1 for the family's first class and +1 for its second.

def _stripes(rng, n, t):
    # 90 degrees: vertical stripes; the tilt is a few degrees either way
    theta = np.deg2rad(90.0 + 6.5 * _col(t) + _u(rng, n, -3.0, 3.0))
    freq = _u(rng, n, 2.5, 5.0)  # cycles per image
    along = _yy * np.cos(theta) + _xx * np.sin(theta)
    return np.sin(2 * np.pi * freq * along + _u(rng, n, 0, 2 * np.pi))


def _checks(rng, n, t):
    freq = 2.6 * np.exp(-0.22 * _col(t))  # fine checks: more squares per image
    px, py = _u(rng, n, 0, 2 * np.pi), _u(rng, n, 0, 2 * np.pi)
    wave = np.sin(2 * np.pi * freq * _xx + px) * np.sin(2 * np.pi * freq * _yy + py)
    return np.tanh(4 * wave)


def _spots(rng, n, t, most=8):
    count = np.clip(np.rint(4.0 + 1.0 * _col(t)), 1, most)
    out = np.zeros((n, SIZE, SIZE), np.float32)
    for k in range(most):
        cx, cy = _u(rng, n, 0.08, 0.92), _u(rng, n, 0.08, 0.92)
        spot = np.exp(-((_xx - cx) ** 2 + (_yy - cy) ** 2) / (2 * 0.04**2))
        out = np.maximum(out, np.where(k < count, spot, 0))
    return 2 * out - 1


def _box(rng, n, t):
    ratio = np.exp(0.22 * _col(t))  # height / width: a tall box above 1
    side = _u(rng, n, 0.3, 0.5)
    half_w, half_h = side / 2 / np.sqrt(ratio), side / 2 * np.sqrt(ratio)
    cx, cy = _u(rng, n, 0.3, 0.7), _u(rng, n, 0.3, 0.7)
    inside = (np.abs(_xx - cx) < half_w) & (np.abs(_yy - cy) < half_h)
    return np.where(inside, 1.0, -1.0).astype(np.float32)


def _cross(rng, n, t):
    width = 0.065 * np.exp(0.22 * _col(t))  # half the bar width
    cx, cy = _u(rng, n, 0.25, 0.75), _u(rng, n, 0.25, 0.75)
    bars = (np.abs(_xx - cx) < width) | (np.abs(_yy - cy) < width)
    return np.where(bars, 1.0, -1.0).astype(np.float32)


_FAMILIES = (_stripes, _checks, _spots, _box, _cross)


def _patterns(rng, family, t):
    """The pattern of each image of ``family`` (array) with attribute ``t``."""
    out = np.empty((len(family), SIZE, SIZE), np.float32)
    for k, draw in enumerate(_FAMILIES):
        where = np.flatnonzero(family == k)
        if where.size:
            out[where] = draw(rng, where.size, t[where])
    return out


def _colour(rng, n):
    """A random colour per image, with a random sign (light or dark pattern): (n, 1, 1, 3)."""
    sign = rng.choice(np.array([-1.0, 1.0], np.float32), size=(n, 1))
    return (sign * rng.uniform(0.2, 1.0, size=(n, 3))).astype(np.float32)[:, None, None, :]


def _chunk(seed: int, split: int, index: int) -> tuple[np.ndarray, np.ndarray]:
    """The :data:`CHUNK` images and labels of one chunk, from a random stream of its own."""
    rng = np.random.default_rng([seed, split, index])
    n = CHUNK
    # Every run of 10 labels holds each class once, so any prefix is balanced to within one.
    blocks = np.tile(np.arange(N_CLASSES, dtype=np.uint8), (n // N_CLASSES, 1))
    labels = rng.permuted(blocks, axis=1).ravel()
    family = labels // 2
    # The class attribute: -SEPARATION or +SEPARATION spreads, plus one spread of noise.
    side = np.where(labels % 2 == 0, -1.0, 1.0)
    t = (side * SEPARATION + rng.normal(0, 1, size=n)) / SEPARATION
    pattern = _patterns(rng, family, t)
    # Clutter: a pattern of another family, any attribute, weaker and in a colour of its own.
    other = (family + rng.integers(1, N_FAMILIES, size=n)) % N_FAMILIES
    clutter = _patterns(rng, other, rng.normal(0, 1.5, size=n))

    contrast = rng.uniform(*CONTRAST, size=(n, 1, 1)).astype(np.float32) * 127.0
    weight = rng.uniform(*CLUTTER, size=(n, 1, 1)).astype(np.float32)
    # The background leans towards its family's tint by a random amount (as sky and water
    # colour many photographs of aeroplanes and ships): a cue shared by the two classes of a pair.
    lean = rng.uniform(*TINT_WEIGHT, size=(n, 1))
    background = (1 - lean) * rng.uniform(60, 190, size=(n, 3)) + lean * _TINTS[family]
    background = background.astype(np.float32)[:, None, None, :]
    slope = rng.normal(0, 30, size=(n, 1, 1, 2)).astype(np.float32)
    gradient = slope[..., :1] * (_xx[..., None] - 0.5) + slope[..., 1:] * (_yy[..., None] - 0.5)
    image = background + gradient
    image += (contrast * pattern)[..., None] * _colour(rng, n)
    image += (contrast * weight * clutter)[..., None] * _colour(rng, n)

    # Occluders: a flat region of a random colour cut off by a straight edge, entering from a
    # side or a corner (not a rectangle, which would look like a box).
    angle = _u(rng, n, 0, 2 * np.pi)
    depth = _u(rng, n, 0.2, 0.45)  # how far it reaches in from the edge
    beyond = (_xx - 0.5) * np.cos(angle) + (_yy - 0.5) * np.sin(angle) > 0.5 - depth
    covered = beyond & (rng.random(size=(n, 1, 1)) < OCCLUDED)
    fill = rng.uniform(0, 255, size=(n, 1, 1, 3)).astype(np.float32)
    np.copyto(image, fill, where=covered[..., None])

    noise = rng.standard_normal(size=image.shape, dtype=np.float32)
    noise *= NOISE_STD
    image += noise
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
    """The stand-in as ``((x_train, y_train), (x_test, y_test))``, like ``load_cifar10``."""
    for name, n in (("n_train", n_train), ("n_test", n_test)):
        if int(n) != n or n < 0:
            raise ValueError(f"{name} must be a whole number >= 0, not {n!r}")
    train = _split(seed, 0, int(n_train), "synthetic train", progress)
    test = _split(seed, 1, int(n_test), "synthetic test", progress)
    return train, test
