"""The card's limit for the lesson's CNN: the same model, initial weights and optimizer, one
compiled call per epoch in plain JAX (Keras's ``stateless_call`` and ``stateless_apply`` are
pure, so ``jax.lax.scan`` runs an epoch's steps on data on the device). An epoch takes its full
batches only: a last, smaller batch's images wait for the next epoch's order."""

from __future__ import annotations


def loss_function(model, training: bool = True):
    """``loss(trainable, non_trainable, x, y) -> (loss, non_trainable)``, as ``fit`` minimises."""
    import keras

    cross_entropy = keras.losses.SparseCategoricalCrossentropy()

    def loss(trainable, non_trainable, x, y):
        out, non_trainable = model.stateless_call(trainable, non_trainable, x, training=training)
        return cross_entropy(y, out), non_trainable

    return loss


def epoch_function(model, optimizer, batch: int, steps: int, scan: bool = True):
    """A compiled ``epoch(state, x, y, key) -> (state, mean loss)``: ``steps`` batches of a new
    order in one ``jax.lax.scan``; with ``scan=False`` a Python loop of a compiled step, as
    XLA:CPU runs convolutions in a scan about 50x slower (the records say which)."""
    import jax

    grad = jax.value_and_grad(loss_function(model), has_aux=True)

    def step(state, rows, x, y):
        trainable, non_trainable, slots = state
        (loss, non_trainable), grads = grad(trainable, non_trainable, x[rows], y[rows])
        trainable, slots = optimizer.stateless_apply(slots, grads, trainable)
        return (trainable, non_trainable, slots), loss

    def order(key, n):
        return jax.random.permutation(key, n)[:steps * batch].reshape(steps, batch)

    def epoch(state, x, y, key):
        state, losses = jax.lax.scan(lambda s, rows: step(s, rows, x, y), state,
                                     order(key, len(x)))
        return state, losses.mean()

    if scan:
        return jax.jit(epoch, donate_argnums=0)
    one, rows_of = jax.jit(step, donate_argnums=0), jax.jit(order, static_argnums=1)

    def looped(state, x, y, key):
        losses = []
        for rows in rows_of(key, len(x)):
            state, loss = one(state, rows, x, y)
            losses.append(loss)
        return state, sum(losses) / len(losses)

    return looped


def accuracy_function(model, batch: int):
    """A compiled ``accuracy(state, x, y)`` over the test images, in batches of ``batch``."""
    import jax
    import jax.numpy as jnp

    def accuracy(state, x, y):
        trainable, non_trainable, _ = state
        whole = len(x) // batch * batch

        def one(_, rows):
            out, _ = model.stateless_call(trainable, non_trainable, x[rows], training=False)
            return None, jnp.sum(jnp.argmax(out, axis=-1) == y[rows])

        _, right = jax.lax.scan(one, None, jnp.arange(whole).reshape(-1, batch))
        return right.sum() / whole

    return jax.jit(accuracy)


def train_limit(*, watch, model, options: dict, data: dict, epochs: int, seed: int):
    """Train ``model`` for ``epochs`` epochs timed by ``watch``; "scan", or "loop" on a CPU."""
    import jax

    x, y = data["device"]
    test_x, test_y = data["test_device"]
    batch = options["batch_size"]
    optimizer = model.optimizer
    optimizer.build(model.trainable_variables)
    state = ([v.value for v in model.trainable_variables],
             [v.value for v in model.non_trainable_variables],
             [v.value for v in optimizer.variables])
    scan = jax.default_backend() != "cpu"
    run = epoch_function(model, optimizer, batch, len(x) // batch, scan=scan)
    accuracy = accuracy_function(model, data["test_batch"])
    key = jax.random.key(seed)
    for _ in range(epochs):
        key, draw = jax.random.split(key)
        watch.begin()
        state, loss = run(state, x, y, draw)
        float(loss)  # waits for the epoch's last step
        watch.end()
        watch.evaluated(float(accuracy(state, test_x, test_y)))
    return "scan" if scan else "loop"
