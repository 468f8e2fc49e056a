"""Episode 9's device-resident input path (``DeviceBatches``): its mechanism, on the CPU.

On a GPU the point is that nothing goes from host to device while training runs. JAX's transfer
guard turns any such copy into an error on the CPU as well, so the tests below prove the
mechanism here: the batches of an epoch are taken with no copy from the host (where an eager
slice and a numpy batch both make one), every image comes once per epoch in a new order, and
the per-step work is one compiled call that is not compiled again.
"""

import numpy as np
import pytest
from conftest import run_on_jax_cpu

jax = pytest.importorskip("jax")

from gpulesson.experiments.feeding import pipelines as fp  # noqa: E402
from gpulesson.experiments.feeding.measure import RECORDS  # noqa: E402
from gpulesson.lesson.feeding import DeviceBatches  # noqa: E402

N, BATCH = 100, 32  # 4 batches, the last one short


def _numbered(n):
    """Images whose first pixel is their number (mod 256) and labels that are their number."""
    x = np.zeros((n, 4, 4, 3), dtype=np.uint8)
    x[:, 0, 0, 0] = np.arange(n) % 256
    return x, np.arange(n, dtype=np.int32)


def _epoch(batches):
    return [batches[i] for i in range(len(batches))]


def test_every_image_comes_once_per_epoch_in_a_new_order_each_epoch():
    x, y = _numbered(N)
    batches = DeviceBatches(x, y, BATCH, seed=3)
    assert len(batches) == 4
    orders = []
    for _ in range(3):
        epoch = _epoch(batches)
        assert [len(b[1]) for b in epoch] == [32, 32, 32, 4]
        labels = np.concatenate([np.asarray(b[1]) for b in epoch])
        assert sorted(labels) == list(range(N))
        # the images travel with their labels
        images = np.concatenate([np.asarray(b[0])[:, 0, 0, 0] for b in epoch])
        assert list(images) == list(labels % 256)
        orders.append(list(labels))
        batches.on_epoch_end()
    assert orders[0] != orders[1] != orders[2]
    # the same seed draws the same orders
    assert list(np.concatenate([np.asarray(b[1]) for b in _epoch(
        DeviceBatches(x, y, BATCH, seed=3))])) == orders[0]


def test_a_batch_is_taken_on_the_device_with_nothing_copied_from_the_host():
    x, y = _numbered(N)
    batches = DeviceBatches(x, y, BATCH)
    _epoch(batches)  # compiles the full and the short batch
    batches.on_epoch_end()
    with jax.transfer_guard("disallow"):
        epoch = _epoch(batches)
    device = batches.x.devices()
    for images, labels in epoch:
        assert isinstance(images, jax.Array) and images.devices() == device
        assert labels.devices() == device
    # The guard catches what the old path did: an eager slice sends its start from the host.
    old = fp.ArrayBatches(batches.x, batches.y, BATCH)
    with jax.transfer_guard("disallow"), pytest.raises(Exception, match="host-to-device"):
        old[0]


def test_each_step_is_one_compiled_call_compiled_once_per_batch_shape():
    x, y = _numbered(N)
    batches = DeviceBatches(x, y, BATCH)
    calls = []
    take = batches.take
    batches.take = lambda *args: calls.append(args) or take(*args)
    for _ in range(3):
        _epoch(batches)
        batches.on_epoch_end()
    assert len(calls) == 3 * len(batches)  # one call a batch, nothing else per step
    assert take._cache_size() == 2  # a full and the short last batch, never again
    assert batches.new_order._cache_size() == 1


_FIT = '''
import json, sys
import jax, keras, numpy as np
from gpulesson.experiments.ceiling.measure import tiny_model
from gpulesson.experiments.feeding import pipelines as fp

class GuardSteps(keras.callbacks.Callback):
    """Each step of the second epoch on (its batch fetched, then the step) with no copy from
    host to device allowed, not even an explicit one."""
    def on_epoch_begin(self, epoch, logs=None):
        self.on = epoch >= 1
    def on_train_batch_begin(self, batch, logs=None):
        if self.on:
            jax.config.update("jax_transfer_guard_host_to_device", "disallow_explicit")
    def on_train_batch_end(self, batch, logs=None):
        jax.config.update("jax_transfer_guard_host_to_device", "allow")

x = np.random.default_rng(0).integers(0, 256, (200, 32, 32, 3), dtype=np.uint8)
y = np.arange(200, dtype=np.int32) % 10
on_device = fp.to_device(x, y, "cpu")
found = {}
for name, batches in [("device", fp.make_pipeline("device", batch_size=64,
                                                  device_arrays=on_device)),
                      ("old device", fp.ArrayBatches(*on_device, 64)),
                      ("ram", fp.make_pipeline("ram", batch_size=64, arrays=(x, y)))]:
    model = tiny_model("cpu")
    try:
        model.fit(batches, epochs=3, callbacks=[GuardSteps()], verbose=0)
        found[name] = "no copy"
    except Exception as error:
        found[name] = "copied" if "host-to-device" in str(error) else repr(error)
    finally:
        jax.config.update("jax_transfer_guard_host_to_device", "allow")
found["method"] = fp.device_method("device")
found["class"] = type(fp.make_pipeline("device", batch_size=64,
                                       device_arrays=on_device)).__name__
print(json.dumps(found))
'''


def test_fit_takes_every_steady_step_with_no_copy_from_the_host_on_jax():
    """With Keras' JAX backend, ``fit`` from the feeding benchmark's ``device`` pipeline copies
    nothing from host to device in a step; the old eager slices and the RAM path do."""
    found = run_on_jax_cpu(_FIT)
    assert found["class"] == "DeviceBatches"
    assert found["method"] == {"method": fp.DEVICE_METHODS["jax"]}
    assert found["device"] == "no copy"
    assert found["old device"] == "copied" and found["ram"] == "copied"


def test_old_device_records_are_kept_off_the_page():
    old = {"pipeline": "device", "mode": "train", "backend": "jax"}
    new = {**old, "method": fp.DEVICE_METHODS["jax"]}
    ram = {"pipeline": "ram", "mode": "train", "backend": "jax"}
    assert RECORDS.visible([old, new, ram]) == [new, ram]
