"""A stopped cell (Kernel > Interrupt Kernel) shows two lines, not a traceback of a hundred: what
was stopped, what is kept and how to go on (gpulesson.interrupt, installed by gpulesson.errors
when a notebook imports gpulesson). Run in IPython's InteractiveShell, in a process of its own."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from gpulesson.interrupt import interrupt_lines, interrupted

ROOT = Path(__file__).resolve().parents[1]


def _shell_run(script: str, folder: Path, backend: str = "tensorflow", timeout: int = 180) -> dict:
    """Run ``script`` in a fresh Python whose IPython shell has imported gpulesson; it prints
    one JSON line, returned here. ``show(cell)`` runs a cell and returns what it showed."""
    prelude = textwrap.dedent("""
        import json
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        shown = []
        full = shell._showtraceback
        def keep(etype, value, stb):
            shown.append(list(stb))
            full(etype, value, stb)
        shell._showtraceback = keep
        # What every notebook does in its first cells: import the lesson's package.
        shell.run_cell("import gpulesson")

        def show(cell):
            shown.clear()
            result = shell.run_cell(cell)
            return {"lines": [line for stb in shown for line in stb],
                    "error": type(result.error_in_exec).__name__}
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KERAS_BACKEND": backend,
           "IPYTHONDIR": str(folder / "ipython")}
    result = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(script)],
                            capture_output=True, text=True, timeout=timeout, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.mark.bad_input("killed job")
def test_importing_the_package_installs_the_short_message_for_a_stopped_cell(tmp_path):
    got = _shell_run("""
        from gpulesson.errors import LessonError
        handled = [kind.__name__ for kind in shell.custom_exceptions]
        stopped = show("x = 1\\ny = 2\\nraise KeyboardInterrupt\\nz = 3")
        other = show("1 / 0")
        print(json.dumps({"handled": handled, "stopped": stopped, "x": shell.user_ns.get("y"),
                          "other": other}))
    """, tmp_path, timeout=60)
    assert got["handled"] == ["LessonError", "KeyboardInterrupt"]
    stopped = got["stopped"]
    assert stopped["error"] == "KeyboardInterrupt", "Run All must stop at a stopped cell"
    assert stopped["lines"] == [
        "KeyboardInterrupt: the cell was stopped at line 3 of the cell.",
        "What it finished before is kept (variables it set, files it wrote); run the cell "
        "again to do the rest."]
    assert got["x"] == 2
    # Other errors keep IPython's traceback.
    assert got["other"]["error"] == "ZeroDivisionError"
    assert any("Traceback" in line for line in got["other"]["lines"]), got["other"]


# The learner's cells (run in the shell), then the checks (run by the script).
FIT_SETUP = '''
import keras
import numpy as np

class StopIn(keras.callbacks.Callback):
    # Interrupts as Kernel > Interrupt Kernel would, in the second step of an epoch.
    def __init__(self, epoch):
        super().__init__()
        self.stop_epoch = epoch
    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
    def on_train_batch_end(self, batch, logs=None):
        if self.epoch == self.stop_epoch and batch == 1:
            raise KeyboardInterrupt

class StopTest(keras.callbacks.Callback):
    def on_test_batch_end(self, batch, logs=None):
        raise KeyboardInterrupt

x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
y = (x[:, 0] > 0).astype("int32")
def new_model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="sparse_categorical_crossentropy")
    return model
model = new_model()
start = [w.copy() for w in model.get_weights()]
'''
# A training function of the lesson that makes its model itself, as train_on does.
TRAIN_NEW = '''
def train_new(epochs):
    model = new_model()
    model.fit(x, y, batch_size=8, epochs=epochs, verbose=0, callbacks=[StopIn(0)])
    return model
'''
FIT = f"""
import numpy as np
assert shell.run_cell({FIT_SETUP!r}).success
held = show("history = model.fit(x, y, batch_size=8, epochs=3, verbose=0,\\n"
            "                    callbacks=[StopIn(1)])")
ns = shell.user_ns
changed = any(not np.array_equal(a, b) for a, b in zip(ns["start"], ns["model"].get_weights()))
finished = len(ns["model"].history.history["loss"])
lesson_like = {{"__name__": "gpulesson.lesson.core",
               **{{name: ns[name] for name in ("new_model", "x", "y", "StopIn")}}}}
exec({TRAIN_NEW!r}, lesson_like)
ns["train_new"] = lesson_like["train_new"]
lost = show("trained = train_new(2)")
evaluating = show("model.evaluate(x, y, verbose=0, callbacks=[StopTest()])")
print(json.dumps({{"held": held, "changed": bool(changed), "finished": finished,
                  "lost": lost, "evaluating": evaluating, "has_history": "history" in ns}}))
"""


@pytest.mark.bad_input("killed job")
@pytest.mark.parametrize("backend", ["tensorflow", "jax"])
def test_a_stopped_training_says_what_is_kept_and_how_to_go_on(backend, tmp_path):
    pytest.importorskip(backend)
    got = _shell_run(FIT, tmp_path, backend=backend)
    held = got["held"]
    assert held["error"] == "KeyboardInterrupt"
    assert held["lines"] == [
        "KeyboardInterrupt: training (fit) was stopped in epoch 2 of 3 (1 finished) at line 1 "
        "of the cell.",
        "model keeps the weights it had reached (the finished epochs' metrics are in "
        "model.history.history): call fit again to train on from there, or rebuild the model "
        "to start over."]
    # What the message says is true: the weights moved, one epoch's metrics are there, and the
    # cell's own assignment did not happen.
    assert got["changed"] and got["finished"] == 1 and not got["has_history"]
    # A model made inside a training function of the lesson is lost with it.
    assert got["lost"]["lines"] == [
        "KeyboardInterrupt: training (fit) was stopped in epoch 1 of 2 (0 finished) at line 1 "
        "of the cell.",
        "The model was made inside train_new(), which returns nothing when stopped: run the "
        "cell again to train from the start (fewer epochs finish sooner)."]
    assert got["evaluating"]["lines"][0] == (
        "KeyboardInterrupt: evaluation (evaluate) was stopped at line 1 of the cell; the model "
        "is unchanged.")
    assert all(len(result["lines"]) == 2 for result in (held, got["lost"], got["evaluating"]))


def _stopped_in(function, *args):
    try:
        function(*args)
    except KeyboardInterrupt as exc:
        return exc.__traceback__
    raise AssertionError("not interrupted")


def test_a_training_loop_of_the_lesson_is_found_by_its_epochs():
    """The PyTorch episode's train_on runs its own loop of epochs 1, 2, ...; its model is lost
    unless the learner holds it."""
    namespace = {"__name__": "gpulesson.lesson.torch"}
    exec(textwrap.dedent("""
        def train_on(model, epochs):
            for epoch in range(1, epochs + 1):
                if epoch == 3:
                    raise KeyboardInterrupt
    """), namespace)
    held = object()
    tb = _stopped_in(namespace["train_on"], held, 5)
    info = interrupted(tb, {"net": held})
    assert (info["what"], info["epoch"], info["epochs"]) == ("training (train_on)", 3, 5)
    assert info["model_names"] == ["net"]
    lines = interrupt_lines(tb, {"net": held})
    assert lines[0] == "KeyboardInterrupt: training (train_on) was stopped in epoch 3 of 5 (2 finished)."
    assert lines[1].startswith("net keeps the weights it had reached: train it again")
    assert "made inside train_on()" in interrupt_lines(tb, {})[1]
