"""The ladder's figure: each rung's TFLOP/s over a whole epoch as a bar with its value,
coloured by what trains it (released Keras, the pre-release, plain JAX)."""

from __future__ import annotations

from gpulesson.experiments.figkit import label_bars, need
from gpulesson.experiments.ladder import records as lr
from gpulesson.records.results import hardware

FILE = "ladder.svg"
COLOURS = {"keras": "#4c72b0", "nightly": "#dd8452", "limit": "#55a868"}
KINDS = {"keras": "Keras 3 (released)", "nightly": "keras-nightly (pre-release)",
         "limit": "plain JAX, one call an epoch"}


def _drawn(records):
    """``(rung, TFLOP/s)`` of each rung recorded, the whole epoch's rate."""
    return [(n, lr.mean_of(records, n, "achieved_tflops")) for n in lr.ORDER if lr.starts(records, n)]


def _machine(records) -> str:
    return "; ".join(f"{k}: {v}" for k, v in hardware(records).items())


def alt_text(records) -> str:
    drawn = _drawn(records)
    if not drawn:
        return "No rung of the ladder is recorded yet."
    said = ", ".join(f"{name} {tflops:.3g}" for name, tflops in drawn)
    return (f"Horizontal bars of the TFLOP/s each rung of the ladder reached over a whole epoch "
            f"on {_machine(records)}, from the lesson's default at the top to the plain-JAX "
            f"limit at the bottom, each bar labelled with its value: {said}.")


def figures(records):
    """A bar per rung, coloured by what trains it (released Keras, the pre-release, plain JAX)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    drawn = _drawn(records)
    need(drawn, "run python -m gpulesson.experiments.ladder")
    fig, ax = plt.subplots(figsize=(8, 1.4 + 0.3 * len(drawn)))
    positions = list(range(len(drawn)))[::-1]
    rates = [tflops for _, tflops in drawn]
    kinds = [lr.RUNGS[name]["part"] for name, _ in drawn]
    ax.barh(positions, rates, height=0.7, color=[COLOURS[k] for k in kinds])
    label_bars(ax, positions, rates)
    ax.set_yticks(positions, [name for name, _ in drawn], fontsize=8)
    ax.set_xlim(0, max(rates) * 1.15)
    ax.set_xlabel("TFLOP/s over a whole epoch (higher is better)")
    parts = dict.fromkeys(kinds)
    fig.legend(handles=[Patch(color=COLOURS[p], label=KINDS[p]) for p in parts], fontsize=7.5,
               loc="lower center", ncol=len(parts), frameon=False)
    fig.suptitle(f"The lesson's CNN, one rung after another. {_machine(records)}", fontsize=8.5)
    fig.tight_layout(rect=(0, 0.04, 1, 1))  # the legend below the axis, clear of the bars
    return (fig,)
