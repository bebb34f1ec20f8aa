"""The examples run (smoke mode, in a subprocess) and print what they promise; the digits
demo reaches its documented accuracy."""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLES = os.path.join(ROOT, "examples")


def _run(script, *args, cwd, timeout=240):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, os.path.join(EXAMPLES, script), *args], cwd=cwd,
                          env=env, capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, f"{script} failed:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_train_digits_smoke(tmp_path):
    pytest.importorskip("sklearn")
    out = _run("train_digits.py", "--smoke", "--out", str(tmp_path), cwd=tmp_path)
    assert "256 training and 359 test images" in out
    assert re.search(r"Epoch 2/2 - 8/8 \[=+\] - .* - loss: [\d.]+ - accuracy: [\d.]+ - "
                     r"val_loss: [\d.]+ - val_accuracy", out)
    assert "conv_block (ConvBlock)" in out and "Total params: 13,706" in out
    assert "restored model matches the trained one: True" in out
    assert os.path.exists(tmp_path / "digits_cnn.weights")
    assert re.search(r"test accuracy: 0\.\d{4}", out)
    assert "training curves: " in out


def test_train_digits_reaches_097(tmp_path):
    pytest.importorskip("sklearn")
    out = _run("train_digits.py", "--out", str(tmp_path), cwd=tmp_path)
    accuracy = float(re.search(r"test accuracy: ([\d.]+)", out).group(1))
    assert accuracy >= 0.97, out


def test_custom_training_loop_smoke(tmp_path):
    out = _run("custom_training_loop.py", "--smoke", cwd=tmp_path)
    assert "epoch   3/3: loss" in out
    assert "optimizer steps: 24" in out  # 3 epochs x ceil(240 / 32) batches
    assert re.search(r"validation accuracy: [01]\.\d{4}", out)


def test_char_rnn_smoke(tmp_path):
    out = _run("char_rnn.py", "--smoke", cwd=tmp_path)
    assert "corpus: 2680 characters, vocabulary of 38, 64 training sequences of 40" in out
    assert "lstm (LSTM)" in out and "Epoch 1/1" in out
    sample = out.split("sample:\n", 1)[1]
    assert sample.startswith("The keeper ") and len(sample.rstrip("\n")) == len("The keeper ") + 20


def test_export_onnx_smoke(tmp_path):
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    out = _run("export_onnx.py", "--smoke", "--out", str(tmp_path), cwd=tmp_path)
    assert "function input: pixels ['batch', 8, 8]" in out
    assert (tmp_path / "bars_cnn.onnx").exists() and (tmp_path / "bars_classify.onnx").exists()
    diff = float(re.search(r"max \|onnxruntime - layerkit\|: (\S+)", out).group(1))
    assert diff < 1e-5
    assert "classes agree: True" in out
