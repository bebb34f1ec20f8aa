"""Train a small CNN, export it to ONNX and run the file with ONNX Runtime.

    pip install "layerkit[onnx]" onnxruntime
    python examples/export_onnx.py              # a few seconds
    python examples/export_onnx.py --smoke      # tiny run (used by the tests)

The task: tell 8x8 images of horizontal bars from vertical ones (generated here). The
trained model is written with ``model.export(path, format="onnx")``; an ``lk.function``
that also preprocesses raw uint8 pixels and returns the class and the probabilities is
written with ``lk.onnx.export``. Both files keep the batch size dynamic, so ONNX
Runtime runs them on a batch size the exporter never traced, and the predictions are
compared with layerkit's.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import numpy as np

import layerkit as lk
from layerkit import layers


def bars(n: int, seed: int = 0):
    """uint8 images (n, 8, 8) with one bright bar on noise; label 0 horizontal, 1 vertical."""
    rng = np.random.default_rng(seed)
    images = rng.integers(0, 60, (n, 8, 8))
    labels = rng.integers(0, 2, n)
    where = rng.integers(0, 8, n)
    for i in range(n):
        if labels[i]:
            images[i, :, where[i]] += 180
        else:
            images[i, where[i], :] += 180
    return images.astype(np.uint8), labels


def build_model():
    return lk.Sequential([
        lk.Input((8, 8, 1), name="image"),
        layers.Conv2D(8, 3, padding="same", activation="relu"),
        layers.MaxPooling2D(),
        layers.Conv2D(16, 3, activation="relu"),
        layers.Flatten(),
        layers.Dropout(0.2),
        layers.Dense(2, activation="softmax"),
    ])


def main(argv=None) -> float:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny fast run")
    parser.add_argument("--out", default=None, help="folder for the .onnx files")
    args = parser.parse_args(argv)
    smoke = args.smoke or os.environ.get("LAYERKIT_SMOKE", "") not in ("", "0")
    out = args.out or tempfile.mkdtemp(prefix="layerkit-onnx-")

    lk.random.set_seed(0)
    images, labels = bars(256 if smoke else 2048)
    x = (images / 255.0).astype(np.float32)[..., None]
    model = build_model()
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    model.fit(x, labels, batch_size=32, epochs=1 if smoke else 3, verbose=0)

    # 1. the model itself: one input "image" (batch, 8, 8, 1), one output "output_0"
    model_path = os.path.join(out, "bars_cnn.onnx")
    model.export(model_path, format="onnx", verbose=False)

    # 2. a function: raw pixels in, (class, probabilities) out
    @lk.function(input_signature=[lk.TensorSpec((None, 8, 8), "uint8")])
    def classify(pixels):
        probs = model(lk.cast(pixels, "float32")[..., None] / 255.0, training=False)
        return lk.argmax(probs, axis=-1), probs

    fn_path = os.path.join(out, "bars_classify.onnx")
    proto = lk.onnx.export(classify, fn_path)
    for v in proto.graph.input:
        dims = [d.dim_param or d.dim_value for d in v.type.tensor_type.shape.dim]
        print(f"function input: {v.name} {dims}")
    print(f"exported: {model_path} and {fn_path}")

    try:
        import onnxruntime as ort
    except ImportError:
        print("onnxruntime is not installed: pip install onnxruntime to run the files")
        return float("nan")
    test_images, test_labels = bars(37, seed=1)   # a batch size the exporter never saw
    sess = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    test_x = (test_images / 255.0).astype(np.float32)[..., None]
    (probs,) = sess.run(None, {"image": test_x})
    diff = float(np.max(np.abs(probs - model.predict(test_x, verbose=0))))
    sess = ort.InferenceSession(fn_path, providers=["CPUExecutionProvider"])
    cls, fn_probs = sess.run(None, {"pixels": test_images})
    want_cls, want_probs = classify(test_images)
    diff = max(diff, float(np.max(np.abs(fn_probs - want_probs.numpy()))))
    print(f"max |onnxruntime - layerkit|: {diff:.2e}")
    print(f"classes agree: {bool(np.array_equal(cls, want_cls.numpy()))}")
    print(f"onnxruntime accuracy on {len(test_labels)} new images: "
          f"{float(np.mean(cls == test_labels)):.3f}")
    return diff


if __name__ == "__main__":
    main()
