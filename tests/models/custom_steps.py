"""Models shared by the model tests: a small MLP and its Keras 3 / Keras 2 style
custom ``train_step`` overrides (not collected: no ``test_`` prefix)."""
import layerkit as lk
from layerkit import layers as L
from layerkit.models import Model


class MLP(Model):
    def __init__(self, k=3, **kwargs):
        super().__init__(**kwargs)
        self.hidden = L.Dense(16, activation="relu")
        self.out = L.Dense(k)

    def call(self, x, training=None):
        return self.out(self.hidden(x))


class Keras3Step(MLP):
    """``compute_loss`` + ``optimizer.apply`` + updating ``self.metrics`` by hand."""

    def train_step(self, data):
        x, y = data
        with lk.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        for m in self.metrics:
            if m.name == "loss":
                m.update_state(loss)
            else:
                m.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


class Keras2Step(MLP):
    """``compiled_loss`` + ``apply_gradients`` + ``compiled_metrics``; the returned logs
    come from :meth:`step_logs`, which subclasses may override."""

    def train_step(self, data):
        x, y = data
        with lk.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compiled_loss(y, y_pred, regularization_losses=self.losses)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        self.compiled_metrics.update_state(y, y_pred)
        return self.step_logs(loss)

    def step_logs(self, loss):
        return {m.name: m.result() for m in self.metrics}
