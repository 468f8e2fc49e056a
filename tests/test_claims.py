"""No timing claim is typed into an episode's prose.

Durations, speed-ups and promises of speed reach the pages from the results files, through
``{{ ref_... }}`` placeholders, or the text says in words that a value is not measured. This
test reads every episode's prose (front matter, text, callouts, exercises and instructor notes;
not code blocks, inline code or placeholders) and fails on

- a number with a time unit: "32 s", "0.6 ms", "10-minute", "two hours";
- a speed-up with a number: "4 times faster", "12x", "3× slower";
- a vague promise: "well under a minute", "a few seconds", "much faster", "many times faster".

An exercise title's minutes ("(10 min)") and an instructor note's paragraph that opens with
"Timing" are the teaching schedule, and are not read. Any other phrase that is not a
measurement (a Slurm setting, numbers an exercise makes up, the output of the cost model's arithmetic) is listed in ``ALLOWED`` with the reason.
"""

import re
from pathlib import Path

import pytest
from carpentry import PLACEHOLDER
from conftest import ROOT

EPISODES = sorted((ROOT / "_episodes").glob("*.md"))

NUMBER_WORDS = (r"one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|fifteen|"
                r"twenty|thirty|forty|fifty|sixty|ninety|a hundred|half an?")
UNITS = (r"ms|milliseconds?|µs|us|microseconds?|ns|nanoseconds?|s|secs?|seconds?|min|mins|"
         r"minutes?|h|hrs?|hours?|days?")
SPEED = r"faster|slower|quicker|as fast|speed-?ups?|more throughput"
CLAIMS = {
    "a number with a time unit": re.compile(
        rf"(?<![\w.])\d[\d,.]*(?:\s?-\s?|\s)?(?:{UNITS})\b"),
    "a number word with a time unit": re.compile(
        rf"\b(?:{NUMBER_WORDS})[\s-]+(?:minutes?|hours?|days?|seconds|milliseconds?|"
        rf"microseconds?|nanoseconds?)\b"),
    "a speed-up with a number": re.compile(
        rf"(?<![\w.])\d[\d,.]*\s?(?:×|x\b|times\b)\s*(?:{SPEED})|(?<![\w.])\d+(?:\.\d+)?x\b|"
        rf"\b(?:{NUMBER_WORDS}|hundred|thousand)\s+times\s+(?:{SPEED})"),
    "a vague promise": re.compile(
        rf"\b(?:a|an|one)\s+(?:minute|hour|millisecond|microsecond|nanosecond)\b|"
        rf"\b(?:a few|few|several|some|tens of|hundreds of|dozens of|many|a couple of)\s+"
        rf"(?:tenths of a second|(?:milli|micro|nano)?seconds|minutes|hours|days)\b|"
        rf"\btenths of a second\b|"
        rf"\b(?:runs?|returns?|done|finish(?:es|ed)?|within|takes?|took|only)\s+(?:in\s+)?"
        rf"(?:(?:milli|micro|nano)?seconds|minutes|hours)\b|"
        rf"\b(?:much|far|many times|several times|tens of times|orders? of magnitude|a lot|"
        rf"dramatically|significantly|considerably|a little|slightly|way)\s+(?:{SPEED})"),
}

# (episode, phrase, why it is not a measurement). The phrase is matched with its whitespace
# normalised; it must contain the claim it allows, and each entry must still be needed.
ALLOWED = [
    ("09-feeding-the-gpu.md", "one epoch of 50,000 images in 1 s on",
     "the episode's goal (feeding.measure.TARGET_EPOCH_SECONDS), not a result"),
    ("09-feeding-the-gpu.md", "A loader alone less than 1.5 times faster than training",
     "the loader rule's threshold (feeding.page.LOADER_MARGIN), not a result"),
    ("08-pytorch.md", "in well under a tenth of a millisecond",
     "arithmetic from the published peak (operations over the peak rate), not a measurement"),
    ("02-connecting.md", "for 4 hours. Predict",
     "the GPU session's request in a prediction, not a result"),
    ("02-connecting.md", "as a 15-minute recap",
     "the instructor's plan for the episode, not a measurement"),
    ("02-connecting.md", "4 cores, 24 GB and 30 minutes",
     "the --time request of jobs/run-notebook.sbatch"),
    ("02-connecting.md", "four cores and one GPU for two hours",
     "a Slurm request compared with a larger one, not a result"),
    ("02-connecting.md", "2 hours, 1 task, 8 cores per task",
     "the form values the exercise gives, turned into --time=02:00:00"),
    ("02-connecting.md", "CPU session's request (6 hours, 4 cores, 24 GB, no GPU)",
     "the CPU session's request (lesson_schedule.sessions; test_first_episodes checks it)"),
    ("02-connecting.md", "20 learners × 6 hours × 4 cores",
     "the CPU session's request in the cost example, not a result"),
    ("02-connecting.md", "20 learners × 4 hours × 1 GPU",
     "the GPU session's request in the cost example, not a result"),
    ("02-connecting.md", "20 learners × 8 hours × 1 GPU",
     "a GPU session for a whole workshop day in the cost example, not a result"),
    ("06-why-gpus-are-fast.md", "and reports 50 µs: 2 × 4096³ operations in 50 µs",
     "the made-up wrong timing the exercise asks learners to find"),
    ("07-small-models.md", "trains at least five times faster per sample than the CPU",
     "the goal the exercise sets, not a result"),
    ("10-beyond-one-gpu.md", "here with a compute time of 20 ms per step",
     "the compute time the terminal example passes to the cost model (--compute-ms 20)"),
    ("10-beyond-one-gpu.md", "0.012 ms over NVLink",
     "cost-model arithmetic of the exercise, checked by test_10_beyond_one_gpu"),
    ("10-beyond-one-gpu.md", "4.4 ms over Ethernet", "cost-model arithmetic, checked"),
    ("10-beyond-one-gpu.md", "8.4 µs per all-reduce, and per step 3.4 µs over NVLink, 5.7 µs "
     "over PCIe and 14 µs over a network", "NCCL's published cost model (parallel."
     "LATENCY_SOURCE), not a measurement; checked against parallel.STEP_LATENCY_US"),
    ("10-beyond-one-gpu.md", "over NVLink takes 0.068 ms",
     "cost-model arithmetic of the exercise, checked by test_10_beyond_one_gpu"),

    ("10-beyond-one-gpu.md", "143.6 ms over Ethernet, 0.40 ms over NVLink",
     "cost-model arithmetic, checked"),
    ("10-beyond-one-gpu.md", "9 × 143.6 ms ≈ 1.3 s", "cost-model arithmetic, checked"),
    ("10-beyond-one-gpu.md", "the server receives 820.4 MB per step, 656.3 ms; the ring sends "
     "179.5 MB per GPU, 143.6 ms", "parameter-server and all-reduce cost-model arithmetic, "
     "checked by test_10_beyond_one_gpu"),
    ("10-beyond-one-gpu.md", "the model gives both exchanges less than a millisecond",
     "cost-model arithmetic of the solution's lines above"),
    ("10-beyond-one-gpu.md", "model that takes three days on one GPU",
     "a made-up scenario of the exercise"),
    ("10-beyond-one-gpu.md", "is requeued 120 s before its time limit",
     "the job script's --signal setting, in the exercise's scenario"),
    ("10-beyond-one-gpu.md", "120 s before the time limit", "the job script's --signal setting"),
    ("10-beyond-one-gpu.md", "one epoch plus these 120 s", "the job script's --signal setting"),
    ("10-beyond-one-gpu.md", "than an epoch plus 120 s", "the job script's --signal setting"),
    ("10-beyond-one-gpu.md", "slows every batch down by 0.2 s",
     "the LESSON_BATCH_DELAY setting the exercise chooses"),
    ("10-beyond-one-gpu.md", "A training job with 10-minute epochs",
     "a made-up scenario of the exercise"),
    ("10-beyond-one-gpu.md", "7 minutes into epoch 12", "a made-up scenario of the exercise"),
    ("10-beyond-one-gpu.md", "The 7 minutes of epoch 12", "its solution"),
    ("11-next-steps.md", "the first epoch takes 95 s", "numbers the exercise makes up, and says so"),
    ("11-next-steps.md", "the next two take 40 s each", "numbers the exercise makes up"),
    ("11-next-steps.md", "about 10 × 40 s = 400 s", "the exercise's arithmetic"),
    ("11-next-steps.md", "about 24,000 s, or 6 h 40 min", "the exercise's arithmetic"),
    ("11-next-steps.md", "ask for 8 to 10 hours", "the exercise's arithmetic"),
]


EXERCISE_MINUTES = re.compile(r"^(:{3,}\{exercise\}.*?)\s*\(\d+ min\)[ \t]*$", re.MULTILINE)

TIMING_NOTE = re.compile(r"^(?:\*\*)?Timing\b(?!s).*?(?=\n[ \t]*\n|\n:{3,})", re.MULTILINE | re.DOTALL)


def prose(text: str) -> str:
    """The episode without code blocks, inline code, placeholders and link targets, with
    whitespace normalised to single spaces."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", " ", text, flags=re.DOTALL | re.MULTILINE)
    # A required exercise's title ends with its minutes: the teaching schedule, not a result.
    text = EXERCISE_MINUTES.sub(r"\1", text)
    # So does an instructor note's paragraph that opens with "Timing": how the minutes are spent.
    text = TIMING_NOTE.sub(" ", text)
    text = PLACEHOLDER.sub(" ", text)
    text = re.sub(r"`[^`\n]*`", " ", text)
    text = re.sub(r"\]\([^)\s]*\)|<https?://[^>]*>|https?://\S+", " ", text)
    return re.sub(r"\s+", " ", text)


def claims(text: str) -> list[tuple[str, int, int]]:
    """(kind, start, end) of every timing claim in already normalised prose."""
    found = []
    for kind, pattern in CLAIMS.items():
        found += [(kind, m.start(), m.end()) for m in pattern.finditer(text)]
    return sorted(found, key=lambda claim: claim[1])


def allowed_spans(name: str, text: str) -> list[tuple[int, int]]:
    spans = []
    for episode, phrase, _ in ALLOWED:
        if episode == name:
            phrase = re.sub(r"\s+", " ", phrase)
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(phrase), text)]
    return spans


def unallowed(name: str, raw: str) -> list[str]:
    text = prose(raw)
    spans = allowed_spans(name, text)
    problems = []
    for kind, start, end in claims(text):
        if not any(a <= start and end <= b for a, b in spans):
            context = text[max(0, start - 50):end + 30].strip()
            problems.append(f"{name}: {kind}: {text[start:end]!r} in '...{context}...'")
    return problems


@pytest.mark.parametrize("path", EPISODES, ids=lambda p: p.name)
def test_no_timing_claim_is_typed_into_the_prose(path: Path):
    problems = unallowed(path.name, path.read_text(encoding="utf-8"))
    assert not problems, ("typed timing claims (use a {{ ref_... }} value, say it is not "
                          "measured, or list a non-measurement in ALLOWED with the reason):\n"
                          + "\n".join(problems))


def test_every_allowed_phrase_is_still_there_and_needed():
    names = {path.name: path for path in EPISODES}
    for episode, phrase, why in ALLOWED:
        assert why.strip(), phrase
        assert episode in names, f"no episode {episode}"
        text = prose(names[episode].read_text(encoding="utf-8"))
        phrase = re.sub(r"\s+", " ", phrase)
        assert phrase in text, f"{episode}: the allowed phrase {phrase!r} is gone: remove it"
        assert claims(phrase), f"{episode}: {phrase!r} holds no claim: remove it from ALLOWED"


@pytest.mark.parametrize("sentence", [
    "One epoch took 32 s on the GPU.",
    "The sweep took 1.5 seconds.",
    "It finishes in 0.6 ms per step.",
    "A 10-minute run.",
    "Training takes two hours on the CPU.",
    "The GPU was 4 times faster.",
    "A 12x speed-up.",
    "The GPU is 3× slower here.",
    "It runs in well under a minute.",
    "It runs in about a minute on two cores.",
    "Each takes a few seconds.",
    "2048 x 2048 takes a few tenths of a second.",
    "The GPU is much faster.",
    "Tensor cores are many times faster.",
    "The first epoch is a little slower.",
    "It returns in microseconds.",
])
def test_the_check_finds_typed_claims(sentence):
    assert claims(prose(sentence)), sentence


@pytest.mark.parametrize("sentence", [
    "The first epoch includes compiling; leave it out when you time.",
    "One epoch took {{ ref_gpu_epoch }} on the GPU.",
    "Set `--time=01:00:00` in the script.",
    "A second environment and a second kernel.",
    "4 GPUs at 128 images take one step on 512 images.",
    "The H100 has 3.35 TB/s of memory bandwidth.",
    "Python 3.11 and Keras 3.",
    "Multiplying two 4,000 × 4,000 matrices.",
    "```bash\nsleep 30s\n```\n",
])
def test_the_check_leaves_other_numbers_alone(sentence):
    assert not claims(prose(sentence)), sentence


def test_an_allowed_phrase_covers_only_itself():
    text = "Slurm signals 120 s before the time limit. One epoch took 40 s."
    problems = unallowed("10-beyond-one-gpu.md", text)
    assert len(problems) == 1 and "'40 s'" in problems[0], problems


def _multiply_adds(model) -> int:
    """Multiply-adds per image of a Keras model's Conv2D and Dense layers."""
    total = 0
    for layer in model.layers:
        kind = type(layer).__name__
        if kind == "Conv2D":
            _, height, width, out = layer.output.shape
            kh, kw = layer.kernel_size
            total += height * width * out * kh * kw * layer.input.shape[-1]
        elif kind == "Dense":
            total += layer.input.shape[-1] * layer.units
    return total


def test_the_three_block_cnns_arithmetic_is_computed_from_the_model():
    import keras
    from keras import layers

    from gpulesson.lesson.core import build_cnn

    four = build_cnn()
    three = keras.Sequential([keras.Input((32, 32, 3)), layers.Rescaling(1 / 255)])
    for filters in (32, 64, 128):
        three.add(layers.Conv2D(filters, 3, padding="same", activation="relu"))
        three.add(layers.MaxPooling2D(2))
    for layer in (layers.Flatten(), layers.Dense(256, activation="relu"), layers.Dropout(0.2),
                  layers.Dense(512, activation="relu"), layers.Dropout(0.2),
                  layers.Dense(10, activation="softmax")):
        three.add(layer)
    macs4, macs3 = _multiply_adds(four), _multiply_adds(three)
    page = " ".join((ROOT / "_episodes" / "05-cpu-vs-gpu.md").read_text(encoding="utf-8").split())
    assert f"In all {three.count_params():,}, against {four.count_params():,}" in page
    assert (f"{macs3 / 1e6:.1f} million multiply-adds per image instead of {macs4 / 1e6:.1f} "
            f"million, {1 - macs3 / macs4:.0%} fewer".replace("%", " %")) in page
    assert "much less arithmetic" not in page


@pytest.mark.parametrize("page, wrong, right", [
    ("_episodes/01-introduction.md", "however many GPUs", "array_api_dispatch=True"),
    ("guide.md", "chmod 3770", "chmod 2775"),
    ("guide.md", "TensorFlow reserves most", "TF_FORCE_GPU_ALLOW_GROWTH"),
    ("reference.md", "TensorFlow reserves most of it when it first uses a\n  GPU,",
     "TF_FORCE_GPU_ALLOW_GROWTH=true"),
    ("_episodes/05-cpu-vs-gpu.md", "TensorFlow reserves most", "TF_FORCE_GPU_ALLOW_GROWTH"),
    ("guide.md", "starts JupyterLab in the lesson's `notebooks/`", "opens JupyterLab there"),
    ("_episodes/02-connecting.md", "--mem=16G", "--mem=24G"),
    ("reference.md", "--mem=16G", "--mem=24G"),
    ("_episodes/04-data-pipeline.md", "HDF5 always reads", "reads only the\n  part you ask for"),
    ("_episodes/04-data-pipeline.md", "with `____` raise `NameError` when", "raises\n  `AttributeError`"),
])
def test_a_fixed_fact_stays_fixed(page, wrong, right):
    text = (ROOT / page).read_text(encoding="utf-8")
    assert wrong not in text and right in text
