"""Eager execution basics: ops run at once, gradients come from a tape.

Run: python examples/eager_basics.py
"""
import numpy as np

import layerkit as lk

# Ops return concrete values immediately.
m = lk.matmul([[2.0]], [[2.0]])
print("matmul:", m.numpy().tolist())  # [[4.0]]


def square(x):
    return lk.multiply(x, x)


grad = lk.gradients_function(square)
print("square(3.):", float(square(3.0)))  # 9.0
print("grad(3.):", [float(g) for g in grad(3.0)])  # [6.0]
# Gradients nest: the gradient of the gradient is the second derivative.
second = lk.gradients_function(lambda x: grad(x)[0])
print("second derivative:", [float(g) for g in second(3.0)])  # [2.0]


# A numerically unstable function: its naive gradient at 100 is nan (inf / inf) ...
def log1pexp(x):
    return lk.log(1 + lk.exp(x))


with np.errstate(over="ignore", invalid="ignore"):
    plain = lk.gradients_function(log1pexp)(100.0)
    print("log1pexp grad at 100 (plain):", [float(g) for g in plain])  # [nan]


# ... and a custom gradient fixes it.
@lk.custom_gradient
def log1pexp_stable(x):
    e = lk.exp(x)

    def grad_fn(dy):
        return dy * (1 - 1 / (1 + e))

    return lk.log(1 + e), grad_fn


with np.errstate(over="ignore"):
    custom = lk.gradients_function(log1pexp_stable)(100.0)
    print("log1pexp grad at 100 (custom):", [float(g) for g in custom])  # [1.0]


# A dynamic model: Python control flow on tensor values, differentiated as it ran.
def collatz_like(x, steps=6):
    """Halve while the value is large, otherwise square-and-shift; the path depends on x."""
    y = x
    for _ in range(steps):
        if float(y) > 1.0:
            y = y * 0.5
        else:
            y = y * y + 0.5
    return y


x = lk.constant(3.0)
with lk.GradientTape() as tape:
    tape.watch(x)
    y = collatz_like(x)
print("dynamic model:", round(float(y), 6), "gradient:", round(float(tape.gradient(y, x)), 6))

# A Variable is watched automatically; one step of gradient descent on (w*x - 2)^2.
w = lk.Variable(0.0, name="w")
for step in range(3):
    with lk.GradientTape() as tape:
        loss = lk.square(w * 4.0 - 2.0)
    (dw,) = tape.gradient(loss, [w])
    w.assign_sub(0.05 * dw)
    print(f"step {step}: loss={float(loss):.4f} w={float(w):.4f}")
