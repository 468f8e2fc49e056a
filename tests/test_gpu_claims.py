"""No GPU claim stands on a page without a GPU record behind it, and comparison words agree
with the records.

**GPU claims.** Each episode is rendered as it reads without any GPU record: its placeholders
are filled from copies of the lesson's results files with every GPU record left out, so that
each ``{{ if ref_... }}`` block that needs a GPU value falls back to its ``else`` part. A
sentence of that page (prose, callouts, exercises, alt texts, front matter; not code) that
states how a GPU performed ("on the GPU ... faster", "the GPU adds up", "no faster on a GPU",
"a speed-up of") is a claim with no GPU record behind it, unless it says that it is a
prediction or a possibility ("expect", "predict", "should", "can", "may", "if", ...), or it is
listed in ``ALLOWED`` with the reason.

**Comparison words.** Page values that compare two measurements ("1.8× faster than", "about
as fast as", "no measurable difference") come from :func:`gpulesson.records.summaries.compare`.
The tests below recompute each from the records, independently of the page code: where the
two ranges overlap, or a side has fewer than two repeats, the words must not rank them.
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from carpentry import (
    MISSING,
    PLACEHOLDER,
    RESULTS_DIR,
    fill_placeholders,
    result_values,
    site_values,
    split_front_matter,
)
from conftest import ROOT

from gpulesson.records import summaries
from gpulesson.records.results import is_gpu

EPISODES = sorted((ROOT / "_episodes").glob("*.md"))

# A sentence that says how a GPU performed (case-insensitive).
GPU = r"\bGPUs?\b"
VERB = (r"(?:is|was|are|were|be|been|trains?|trained|runs?|ran|gets?|got|stays?|stayed|"
        r"becomes?|became|took|takes?)")
SPEED = r"(?:faster|slower|quicker|as fast|no faster|no slower)"
GPU_CLAIMS = {
    "a GPU's speed in words": re.compile(
        rf"{GPU}[^.!?]{{0,60}}?\b{VERB}\b[^.!?]{{0,60}}?\b{SPEED}\b", re.I),
    "a speed in words about a GPU": re.compile(
        rf"\b{SPEED}\b[^.!?]{{0,40}}?\b(?:on|than)\s+(?:a|the)\s+GPUs?\b", re.I),
    "a GPU winning or losing": re.compile(
        rf"{GPU}[^.!?]{{0,40}}?\b(?:wins?|won|loses|lost|pays?\s+off|paid\s+off)\b", re.I),
    "a GPU's speed-up": re.compile(
        rf"{GPU}[^.!?]{{0,80}}?\bspeed-?ups?\s+(?:of|was|is|were)\b|"
        rf"\bspeed-?ups?\s+(?:of|was|is)\b[^.!?]{{0,40}}?{GPU}", re.I),
    "how a GPU adds up": re.compile(rf"{GPU}[^.!?]{{0,40}}?\badds?\s+up\b", re.I),
    "how long GPUs take": re.compile(rf"{GPU}[^.!?]{{0,40}}?\btakes?\s+as\s+long\s+as\b", re.I),
    "whether a GPU helps": re.compile(rf"{GPU}\s+(?:does|did)\s+not\s+help", re.I),
    "what a GPU step costs": re.compile(r"\bsteps?\s+costs?\s+almost\s+the\s+same\b", re.I),
}
# Words that make a sentence a prediction, a possibility or a condition, not a measurement.
HEDGES = re.compile(
    r"\b(?:expect\w*|predict\w*|should|would|could|can|cannot|may|might|if|whether|suppose|"
    r"assumes?|assumed|assuming|assumptions?|reasoning|until|once|vendors?|specifications?|"
    r"published)\b", re.I)

# (episode, phrase, why it is not a claim about a measurement); each must still be needed.
ALLOWED = [
    ("06-why-gpus-are-fast.md", "The crossover is the smallest size from which the GPU is faster",
     "the definition of the crossover, which the notebook computes"),
    ("06-why-gpus-are-fast.md", "and the first at which the GPU won",
     "the learner's own sweep, which the exercise asks them to run on a GPU node"),
    ("07-small-models.md", "above 1 the GPU is faster", "the definition of the speed-up's scale"),
    ("10-beyond-one-gpu.md", "a speed-up of 1.8, 3.4 and 6.5",
     "the cost model's arithmetic, checked by test_10_beyond_one_gpu"),
    ("10-beyond-one-gpu.md", "every GPU added loses a little more",
     "the cost model's arithmetic of the solution"),
    ("11-next-steps.md", "seen when a GPU pays off and when it does not",
     "what the lesson taught, in general: the pages before show the measurements"),
    ("11-next-steps.md", "paid plans give more and faster GPUs", "a service's offer, not a result"),
]


def prose(text: str) -> str:
    """The page without code blocks, inline code and link targets; paragraphs kept apart."""
    text = re.sub(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", "\n\n", text, flags=re.DOTALL | re.MULTILINE)
    text = re.sub(r"`[^`\n]*`", " ", text)
    return re.sub(r"\]\([^)\s]*\)|<https?://[^>]*>|https?://\S+", " ", text)


def sentences(text: str) -> list[str]:
    """The sentences of ``text``: paragraphs, list items, table cells and directive lines
    apart, each split after '.', '!' or '?'."""
    found = []
    for block in re.split(r"\n\s*\n|\n\s*[-*] |\n\s*\d+\. |\n:+\{?[\w-]*\}?|\|", text):
        block = re.sub(r"\s+", " ", block).strip()
        found += [s.strip() for s in re.split(r"(?<=[.!?])[\"'”)]?\s+", block) if s.strip()]
    return found


def page_sentences(filled: str) -> list[str]:
    """The sentences a reader takes as statements: the title and keypoints of the front matter
    (its questions ask, its objectives set tasks) and the body."""
    meta, body = split_front_matter(filled)
    found = [str(meta.get("title", ""))] + [str(k) for k in meta.get("keypoints", [])]
    return [s for s in found if s] + sentences(prose(body))


def gpu_claims(sentence: str) -> list[str]:
    """The kinds of GPU claim ``sentence`` makes (none when it is hedged or a question)."""
    if HEDGES.search(sentence) or sentence.endswith("?"):
        return []
    return [kind for kind, pattern in GPU_CLAIMS.items() if pattern.search(sentence)]


def _allowed(name: str, sentence: str) -> bool:
    return any(episode == name and re.sub(r"\s+", " ", phrase) in sentence
               for episode, phrase, _ in ALLOWED)


def unsupported_claims(name: str, page: str, values: dict[str, str]) -> list[str]:
    """The GPU claims of a page (raw episode text) filled with ``values``."""
    filled = fill_placeholders(page, ROOT, values)
    if not filled.startswith("---"):
        filled = "---\ntitle: made up\n---\n" + filled
    return [f"{name}: {', '.join(kinds)}: {sentence!r}"
            for sentence in page_sentences(filled)
            if (kinds := gpu_claims(sentence)) and not _allowed(name, sentence)]


@pytest.fixture(scope="module")
def values_without_gpu(tmp_path_factory) -> dict[str, str]:
    """The pages' values as they are without any GPU record: the results files copied with
    every GPU record left out."""
    root = tmp_path_factory.mktemp("no-gpu")
    (root / RESULTS_DIR).mkdir()
    for path in (ROOT / RESULTS_DIR).glob("*.jsonl"):
        lines = [line for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip() and not is_gpu(json.loads(line))]
        (root / RESULTS_DIR / path.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    for path in (ROOT / RESULTS_DIR).iterdir():
        if path.is_dir():
            shutil.copytree(path, root / RESULTS_DIR / path.name)
    return {**site_values(ROOT), **result_values(root)}


@pytest.mark.parametrize("path", EPISODES, ids=lambda p: p.name)
def test_no_gpu_claim_without_a_gpu_record(path: Path, values_without_gpu):
    problems = unsupported_claims(path.name, path.read_text(encoding="utf-8"), values_without_gpu)
    assert not problems, (
        "GPU claims on a page without a GPU record: write them inside {{ if ref_<gpu value> }} "
        "... {{ endif }}, say that they are predictions, or list them in ALLOWED with the "
        "reason:\n" + "\n".join(problems))


def test_without_gpu_records_the_gpu_values_are_missing(values_without_gpu):
    for name in ("ref_gpu_epoch", "ref_speedup", "ref_gpu_vs_cpu", "ref_mm_gpu_float32",
                 "ref_mm_crossover", "ref_mlp_gpu_epoch", "ref_mlp_sweep_paying",
                 "ref_mlp_sweep_gpu_row_steps", "ref_torch_gpu_epoch"):
        assert values_without_gpu[name] == MISSING, name


def test_every_allowed_phrase_is_still_there_and_needed(values_without_gpu):
    names = {path.name: path for path in EPISODES}
    for episode, phrase, why in ALLOWED:
        assert why.strip() and episode in names, (episode, phrase)
        filled = fill_placeholders(names[episode].read_text(encoding="utf-8"), ROOT,
                                   values_without_gpu)
        found = [s for s in page_sentences(filled) if re.sub(r"\s+", " ", phrase) in s]
        assert found, f"{episode}: the allowed phrase {phrase!r} is gone: remove it"
        assert any(gpu_claims(s) for s in found), f"{episode}: {phrase!r} needs no allowance"


@pytest.mark.parametrize("page", [
    "On the GPU the model trained 3× faster than on the CPU.",
    "A small model trains no faster on a GPU, often slower.",
    "## Why the GPU does not help here",
    "Its losses differ: the GPU adds up numbers in another order.",
    "Six tasks on six free GPUs take as long as one.",
    "The GPU gave a speed-up of {{ ref_cpu_epoch }} per epoch.",
    "The GPU's steps cost almost the same for 32 rows as for thousands.",
    "{{ if ref_cpu_epoch }}The GPU was faster than the CPU.{{ endif }}",
    "{{ if ref_gpu_epoch }}{{ else }}The GPU won clearly.{{ endif }}",
    ":::{figure} x.svg\n:alt: Bars for each device, labelled with the GPU's speed-up of 4 over the CPU.\n:::",
])
def test_the_check_fails_on_a_made_up_page_with_a_gpu_claim(page, values_without_gpu):
    assert unsupported_claims("made-up.md", page, values_without_gpu), page


@pytest.mark.parametrize("page", [
    "{{ if ref_gpu_epoch }}One epoch took {{ ref_gpu_epoch }} on the GPU, faster than the CPU."
    "{{ endif }}",
    "Expect the GPU to be faster for large matrices.",
    "A prediction: the speed-up should fall with small batches on a GPU.",
    "If the GPU run happened, the GPU may be slower for a tiny model.",
    "The GPU run has not been recorded yet.",
    "```python\nprint('the GPU is faster')\n```",
])
def test_the_check_leaves_conditional_and_predicted_sentences_alone(page, values_without_gpu):
    assert not unsupported_claims("made-up.md", page, values_without_gpu), page


# --- comparison words -----------------------------------------------------------------------

def _summary(seconds) -> dict:
    """An independent summary: median, fastest, slowest and count of timed samples."""
    ordered = sorted(seconds)
    middle = len(ordered) // 2
    median = (ordered[middle] if len(ordered) % 2
              else (ordered[middle - 1] + ordered[middle]) / 2)
    return {"median": median, "min": ordered[0], "max": ordered[-1], "n": len(ordered)}


def _check_words(text: str, a: dict, b: dict, *, higher_is_better: bool = False) -> None:
    """``text`` (the page's words for A against B) agrees with the two summaries."""
    rankable = a["n"] >= 2 and b["n"] >= 2 and (a["max"] < b["min"] or b["max"] < a["min"])
    if not rankable:
        assert "faster" not in text and "slower" not in text, text
        assert text in (summaries.SAME_WORD, summaries.NO_DIFFERENCE) or summaries.NO_DIFFERENCE in text
        return
    a_better = (a["median"] > b["median"]) if higher_is_better else (a["median"] < b["median"])
    assert ("faster" if a_better else "slower") in text, text


def _matmul_records() -> list[dict]:
    from gpulesson.experiments.matmul.page import reference_run

    return reference_run(ROOT / RESULTS_DIR / "matmul.jsonl")


def _compared(comparisons: dict, values: dict):
    """(value name, float32 record, other precision's record) of each comparison the records
    hold; a comparison they cannot make must say the value is missing."""
    from gpulesson.experiments.matmul.measure import find

    records = _matmul_records()
    for name, (device, dtype) in comparisons.items():
        base, other = find(records, device, "float32"), find(records, device, dtype)
        if base and other:
            yield name, base, other
        else:
            assert values[name] == MISSING, name


def _sizes_said(text: str) -> dict[str, set[int]]:
    """The sizes a size-by-size value names after each of its verdicts ("faster at n = 1,024,
    slower at n = 32 and 4,096, with no measurable difference at n = 16 and 512")."""
    keys = {"faster": "faster at n = ", "slower": "slower at n = ",
            summaries.NO_DIFFERENCE: f"{summaries.NO_DIFFERENCE} at"}
    found = sorted((text.index(key), name) for name, key in keys.items() if key in text)
    said = {}
    for (start, name), (end, _) in zip(found, [*found[1:], (len(text), None)], strict=True):
        said[name] = {int(n.replace(",", "")) for n in re.findall(r"\d{1,3}(?:,\d{3})*",
                                                                   text[start:end])}
    return said


def test_matmul_precision_words_size_by_size_agree_with_the_records():
    """Each size's verdict, recomputed from the records, is the one the page names it under:
    a rule read at one size (float16 slower than float32) is not said of the others."""
    from gpulesson.experiments.matmul import page

    values = page.substitutions(ROOT / RESULTS_DIR / "matmul.jsonl")
    checked = 0
    by_size = {f"ref_mm_cpu_{dtype}_by_size": ("cpu", dtype) for dtype in ("bfloat16", "float16")}
    for name, base, other in _compared(by_size, values):
        said = _sizes_said(values[name])
        for point in other["points"]:
            ref = next(p for p in base["points"] if p["n"] == point["n"])
            a, b = _summary(point["seconds"]), _summary(ref["seconds"])
            verdict = [key for key, sizes in said.items() if point["n"] in sizes]
            assert len(verdict) == 1, (name, point["n"], values[name])
            _check_words(verdict[0], a, b)
            checked += 1
    assert checked or not _matmul_records(), \
        "no size-by-size comparison of precisions in the matmul records"


def test_the_size_by_size_words_follow_made_up_records(tmp_path):
    from gpulesson.experiments.matmul import page

    def sweep(dtype, by_size):
        points = [{"n": n, "seconds": s, "median_seconds": sorted(s)[1], "min_seconds": min(s),
                   "max_seconds": max(s), "gflops": 1.0, "first_call_seconds": 1.0}
                  for n, s in by_size.items()]
        return {"experiment": "matmul", "run_id": "r1", "date": "2026-01-01T00:00:00",
                "method": "amortised",
                "device_kind": "cpu", "device": "CPU", "dtype": dtype, "gpu_count": 0,
                "backend": "tensorflow", "versions": {"keras": "3", "tensorflow": "2"},
                "cpu_model": "Test CPU", "cores_usable": 2, "cores_total": 2, "points": points}

    path = tmp_path / "matmul.jsonl"
    base = {64: [1.0, 1.1, 1.2], 1024: [4.0, 4.1, 4.2], 4096: [9.0, 9.1, 9.2]}
    half = {64: [1.05, 1.15, 1.25], 1024: [3.0, 3.1, 3.2], 4096: [12.0, 12.1, 12.2]}
    path.write_text("".join(json.dumps(sweep(d, t)) + "\n" for d, t in
                            [("float32", base), ("float16", half), ("bfloat16", base)]))
    values = page.substitutions(path)
    assert values["ref_mm_cpu_float16_by_size"] == (
        f"faster at n = 1,024, slower at n = 4,096, with {summaries.NO_DIFFERENCE} at n = 64")
    assert _sizes_said(values["ref_mm_cpu_float16_by_size"]) == {
        "faster": {1024}, "slower": {4096}, summaries.NO_DIFFERENCE: {64}}
    assert values["ref_mm_cpu_bfloat16_by_size"].startswith(f"{summaries.NO_DIFFERENCE} at any size")


def test_the_whole_model_verdict_agrees_with_the_records():
    from gpulesson.experiments.matmul import page

    found = page.model_precision(ROOT / RESULTS_DIR / "feeding.jsonl")
    values = page.substitutions(ROOT / RESULTS_DIR / "matmul.jsonl")
    if not found:
        assert values["ref_mm_model_verdict"] == MISSING
        return
    mixed, base, _ = found
    _check_words(values["ref_mm_model_verdict"], mixed, base, higher_is_better=True)


def test_the_gpu_against_the_cpu_in_words_agrees_with_the_records():
    from gpulesson.experiments.cnn import page
    from gpulesson.experiments.cnn.page import reference_run

    records = reference_run(ROOT / RESULTS_DIR / "cnn-cpu-vs-gpu.jsonl")
    value = page.substitutions(ROOT / RESULTS_DIR / "cnn-cpu-vs-gpu.jsonl")["ref_gpu_vs_cpu"]
    cpu = next((r for r in records if not is_gpu(r)), None)
    gpu = next((r for r in records if is_gpu(r)), None)
    if not (cpu and gpu):
        assert value == MISSING
        return
    _check_words(value, _summary(gpu["epoch_seconds"][1:]), _summary(cpu["epoch_seconds"][1:]))


@pytest.mark.parametrize("a, b, ranked", [
    ([1.0, 1.1, 1.2], [1.15, 1.3, 1.4], False),  # overlapping ranges
    ([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], True),
    ([1.0], [2.0], False),  # one repeat: no range
])
def test_the_check_of_comparison_words_catches_a_ranking_of_noise(a, b, ranked):
    sa, sb = _summary(a), _summary(b)
    words = summaries.compare(summaries.summarise(a), summaries.summarise(b)).text
    _check_words(words, sa, sb)  # what compare says always passes
    if not ranked:
        with pytest.raises(AssertionError):
            _check_words("2.0× faster than", sa, sb)  # a page that ranks noise fails
    else:
        with pytest.raises(AssertionError):
            _check_words(summaries.SAME_WORD, sa, sb)


def test_matmul_comparisons_follow_the_page_when_records_change(tmp_path):
    """Made-up sweeps: overlapping bfloat16 and float32 timings give no ranking on the page."""
    from gpulesson.experiments.matmul import page

    def sweep(dtype, seconds):
        return {"experiment": "matmul", "run_id": "r1", "date": "2026-01-01T00:00:00",
                "method": "amortised",
                "device_kind": "cpu", "device": "CPU", "dtype": dtype, "gpu_count": 0,
                "backend": "tensorflow", "versions": {"keras": "3", "tensorflow": "2"},
                "cpu_model": "Test CPU", "cores_usable": 2, "cores_total": 2,
                "points": [{"n": 64, "seconds": seconds, "median_seconds": sorted(seconds)[1],
                            "min_seconds": min(seconds), "max_seconds": max(seconds),
                            "gflops": 1.0, "first_call_seconds": 1.0}]}

    path = tmp_path / "matmul.jsonl"
    rows = [sweep("float32", [1.0, 1.1, 1.2]), sweep("bfloat16", [1.05, 1.15, 1.25]),
            sweep("float16", [3.0, 3.1, 3.2])]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    values = page.substitutions(path)
    assert values["ref_mm_cpu_bfloat16_by_size"].startswith(summaries.NO_DIFFERENCE)
    assert values["ref_mm_cpu_float16_by_size"].startswith("slower")
    assert values["ref_mm_model_verdict"] == MISSING  # no feeding records beside it


def test_no_page_value_that_ranks_is_typed_elsewhere():
    """The comparison values are used by the pages, so their words reach the readers."""
    text = "".join(path.read_text(encoding="utf-8") for path in EPISODES)
    used = {m[1] for m in PLACEHOLDER.finditer(text)}
    assert {"ref_mm_cpu_float16_by_size", "ref_mm_cpu_bfloat16_by_size", "ref_mm_model_verdict",
            "ref_gpu_vs_cpu"} <= used
