"""Two lines, instead of a traceback of Keras' internals, when a notebook cell is interrupted:
what was stopped, what is kept (a model's weights and finished epochs; not a model made inside a
function, like ``train_on``), and how to go on. Imports nothing but the standard library.
"""

from collections.abc import Mapping

# Keras' calls that can run for long, and what to call them in the message.
KERAS_CALLS = {"fit": "training (fit)", "evaluate": "evaluation (evaluate)",
               "predict": "prediction (predict)"}
LESSON_PACKAGE = "gpulesson.lesson"  # the code the episodes teach (their training loops)


def _frames(tb):
    """The frames of a traceback, outermost first, with the line each was at."""
    while tb is not None:
        yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _names_of(obj, namespace: Mapping) -> list[str]:
    """The learner's variables that hold ``obj`` (not IPython's _, _1, ...)."""
    if obj is None:
        return []
    return sorted(name for name, value in namespace.items()
                  if value is obj and not name.startswith("_"))


def interrupted(tb, namespace: Mapping | None = None) -> dict:
    """What the interrupted cell was doing, from the KeyboardInterrupt's traceback ``tb``: ``what``,
    ``function`` (Keras' call), ``inside`` (the lesson's function), ``epoch`` (1-based) and
    ``epochs``, ``model_names`` (in ``namespace``) and ``line`` (of the cell)."""
    namespace = {} if namespace is None else namespace
    found = {"what": None, "function": None, "inside": None, "epoch": None, "epochs": None,
             "model_names": [], "line": None}
    model = None
    for frame, line in _frames(tb):
        name, local = frame.f_code.co_name, frame.f_locals
        module = frame.f_globals.get("__name__") or ""
        if frame.f_globals is namespace and name == "<module>":
            found["line"] = line  # the cell (the innermost one: %run or exec may nest)
        elif (module.startswith("keras.") and name in KERAS_CALLS and "self" in local
              and found["function"] is None):  # the outermost: fit runs evaluate inside
            found.update(what=KERAS_CALLS[name], function=name)
            model = local["self"]
            if name == "fit" and isinstance(local.get("epoch"), int):
                first = local.get("initial_epoch") or 0
                epochs = local.get("epochs")
                found.update(epoch=local["epoch"] - first + 1,
                             epochs=epochs - first if isinstance(epochs, int) else None)
        elif (module.startswith(LESSON_PACKAGE) and isinstance(local.get("epochs"), int)
              and found["inside"] is None and found["function"] is None):
            # A training function the episodes teach (train_on, train_mlp): it may make its
            # model itself, and may run its own loop of epochs 1, 2, ... (PyTorch).
            found.update(inside=name, epochs=local["epochs"])
            if isinstance(local.get("epoch"), int):
                found["epoch"] = local["epoch"]
            model = local.get("model")
    if found["what"] is None and found["inside"] is not None:
        found["what"] = f"training ({found['inside']})"
    found["model_names"] = _names_of(model, namespace)
    return found


def interrupt_lines(tb, namespace: Mapping | None = None) -> list[str]:
    """Two lines for an interrupted cell: what was stopped, what is kept and how to go on."""
    info = interrupted(tb, namespace)
    where = f" at line {info['line']} of the cell" if info["line"] else ""
    what = info["what"]
    if what is None:
        return [f"KeyboardInterrupt: the cell was stopped{where}.",
                "What it finished before is kept (variables it set, files it wrote); "
                "run the cell again to do the rest."]
    if info["function"] in ("evaluate", "predict"):
        return [f"KeyboardInterrupt: {what} was stopped{where}; the model is unchanged.",
                "Run the cell again for its result."]
    epoch, epochs, names = info["epoch"], info["epochs"], info["model_names"]
    stopped = (f"{what} was stopped in epoch {epoch} of {epochs} ({epoch - 1} finished){where}."
               if epoch is not None and epochs else f"{what} was stopped{where}.")
    if names and info["function"] != "fit":
        kept = (f"{names[0]} keeps the weights it had reached: train it again to go on, "
                "or rebuild it to start over.")
    elif names:
        metrics = (f" (the finished epochs' metrics are in {names[0]}.history.history)"
                   if epoch is not None and epoch > 1 else "")
        kept = (f"{names[0]} keeps the weights it had reached{metrics}: call fit again to train "
                "on from there, or rebuild the model to start over.")
    elif info["inside"] is not None:
        kept = (f"The model was made inside {info['inside']}(), which returns nothing when "
                "stopped: run the cell again to train from the start (fewer epochs finish sooner).")
    else:
        kept = ("The model keeps the weights it had reached: call fit again to train on from "
                "there, or rebuild it to start over.")
    return [f"KeyboardInterrupt: {stopped}", kept]
