"""lk.utils.plot_model (text, DOT, matplotlib images, no graphviz) and get_file (Keras's
cache layout, local origins only)."""
import hashlib
import io
import os
import sys
import tarfile
import zipfile

import numpy as np
import pytest

import layerkit as lk
from layerkit import layers as L


def _branching():
    i = lk.Input((4,), name="x")
    h = L.Dense(8, activation="relu", name="hidden")(i)
    a = L.Dense(2, name="a")(h)
    b = L.Dense(3, name="b")(h)
    return lk.Model(i, L.Concatenate(name="cat")([a, b]), name="branchy")


# ---- plot_model ---------------------------------------------------------------------------
def test_text_diagram_of_a_functional_model(tmp_path):
    path = lk.utils.plot_model(_branching(), tmp_path / "m.txt", show_shapes=True,
                               show_layer_activations=True)
    assert path == os.fspath(tmp_path / "m.txt")
    assert open(path).read() == """\
Model: "branchy"
+-------------------------------------+
| x (InputLayer)                      |
| Output shape: (None, 4)             |
+-------------------------------------+
                   |
                   v
+-------------------------------------+
| hidden (Dense)                      |
| Activation: relu                    |
| Input shape: (None, 4)              |
| Output shape: (None, 8)             |
+-------------------------------------+
                   |
                   v
+-------------------------------------+
| a (Dense)                           |
| Activation: linear                  |
| Input shape: (None, 8)              |
| Output shape: (None, 2)             |
+-------------------------------------+

+-------------------------------------+
| b (Dense)                           |
| Activation: linear                  |
| Input shape: (None, 8)              |
| Output shape: (None, 3)             |
| Inputs: hidden                      |
+-------------------------------------+

+-------------------------------------+
| cat (Concatenate)                   |
| Input shape: [(None, 2), (None, 3)] |
| Output shape: (None, 5)             |
| Inputs: a, b                        |
+-------------------------------------+
"""


def test_dot_source_fields_and_edges(tmp_path):
    m = _branching()
    m.get_layer("a").trainable = False
    text = open(lk.utils.plot_model(m, tmp_path / "m.dot", show_dtype=True,
                                    show_trainable=True, show_layer_names=False,
                                    rankdir="LR", dpi=96)).read()
    assert "rankdir=LR;" in text and "dpi=96;" in text
    assert '"a" [label="{Dense|Output dtype: float32|Non-trainable}"];' in text
    assert '"hidden" [label="{Dense|Output dtype: float32|Trainable}"];' in text
    edges = sorted(line.strip() for line in text.splitlines() if "->" in line)
    assert edges == ['"a" -> "cat";', '"b" -> "cat";', '"hidden" -> "a";',
                     '"hidden" -> "b";', '"x" -> "hidden";']


def test_sequential_has_no_input_box_and_nested_models_expand(tmp_path):
    inner = lk.Sequential([lk.Input((4,)), L.Dense(3, name="d1")], name="inner")
    outer = lk.Sequential([lk.Input((4,)), inner, L.Dense(1, name="d2")], name="outer")
    flat = open(lk.utils.plot_model(outer, tmp_path / "o.txt")).read()
    assert "InputLayer" not in flat and "inner (Sequential)" in flat and "d1" not in flat
    nested = open(lk.utils.plot_model(outer, tmp_path / "n.txt", expand_nested=True)).read()
    assert "|   d1 (Dense)" in nested


def test_subclassed_model_is_one_box_and_errors(tmp_path):
    class Net(lk.Model):
        def __init__(self):
            super().__init__(name="net")
            self.d = L.Dense(2)

        def call(self, x):
            return self.d(x)

    net = Net()
    with pytest.raises(ValueError, match="has not yet been built"):
        lk.utils.plot_model(net, tmp_path / "n.txt")
    net(np.zeros((1, 3), np.float32))
    text = open(lk.utils.plot_model(net, tmp_path / "n.txt")).read()
    assert text.count("+---") == 2 and "| net (Net)" in text
    with pytest.raises(ValueError, match="rankdir"):
        lk.utils.plot_model(_branching(), tmp_path / "x.txt", rankdir="UP")
    with pytest.raises(ValueError, match="unrecognized keyword arguments"):
        lk.utils.plot_model(_branching(), tmp_path / "x.txt", colour=True)


def test_png_svg_and_pdf_with_matplotlib(tmp_path):
    pytest.importorskip("matplotlib")
    m = _branching()
    png = lk.utils.plot_model(m, tmp_path / "m.png", show_shapes=True, dpi=50)
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
    big = lk.utils.plot_model(m, tmp_path / "big.png", show_shapes=True, dpi=100)
    import matplotlib.image as mpimg
    h50, w50 = mpimg.imread(png).shape[:2]
    h100, w100 = mpimg.imread(big).shape[:2]
    assert abs(h100 - 2 * h50) <= 2 and abs(w100 - 2 * w50) <= 2   # dpi scales the image
    chain = lk.Sequential([lk.Input((4,))] + [L.Dense(4) for _ in range(5)])
    tall = mpimg.imread(lk.utils.plot_model(chain, tmp_path / "tb.png", dpi=50)).shape
    wide = mpimg.imread(lk.utils.plot_model(chain, tmp_path / "lr.png", dpi=50,
                                            rankdir="LR")).shape
    assert tall[0] > 2 * tall[1] and wide[1] > 2 * wide[0]      # TB vs LR layouts
    assert open(lk.utils.plot_model(m, tmp_path / "m.svg")).read().lstrip().startswith("<?xml")
    with open(lk.utils.plot_model(m, tmp_path / "m.pdf"), "rb") as f:
        assert f.read(5) == b"%PDF-"
    assert lk.utils.plot_model(m, tmp_path / "noext") == os.fspath(tmp_path / "noext.png")


def test_without_matplotlib_a_text_diagram_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.warns(UserWarning, match="matplotlib is not installed"):
        path = lk.utils.plot_model(_branching(), tmp_path / "model.png")
    assert path == os.fspath(tmp_path / "model.txt") and not (tmp_path / "model.png").exists()
    assert open(path).read().startswith('Model: "branchy"')


# ---- get_file --------------------------------------------------------------------------
def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_get_file_copies_a_local_origin_into_keras_cache_layout(tmp_path):
    src = _write(tmp_path / "src" / "data.csv", b"a,b\n1,2\n")
    cache = tmp_path / "cache"
    path = lk.utils.get_file(origin=src.as_uri(), cache_dir=cache)
    assert path == os.fspath(cache / "datasets" / "data.csv")
    assert open(path, "rb").read() == b"a,b\n1,2\n"
    other = lk.utils.get_file("renamed.csv", src.as_uri(), cache_dir=cache, cache_subdir="x")
    assert other == os.fspath(cache / "x" / "renamed.csv")
    # a cached file is used as is: the origin is not read again
    src.write_bytes(b"changed")
    assert open(lk.utils.get_file(origin=src.as_uri(), cache_dir=cache), "rb").read() == \
        b"a,b\n1,2\n"
    forced = lk.utils.get_file(origin=src.as_uri(), cache_dir=cache, force_download=True)
    assert open(forced, "rb").read() == b"changed"


def test_get_file_uses_a_cached_file_for_a_remote_origin_and_never_downloads(tmp_path):
    cache = tmp_path / "cache"
    origin = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz"
    with pytest.raises(FileNotFoundError, match=r"mnist.npz is not in the cache at .*"
                                                r"datasets/mnist.npz.*does not download"):
        lk.utils.get_file("mnist.npz", origin, cache_dir=cache)
    _write(cache / "datasets" / "mnist.npz", b"cached")
    assert lk.utils.get_file("mnist.npz", origin, cache_dir=cache) == \
        os.fspath(cache / "datasets" / "mnist.npz")
    digest = hashlib.sha256(b"cached").hexdigest()
    assert lk.utils.get_file("mnist.npz", origin, file_hash=digest, cache_dir=cache)
    with pytest.raises(FileNotFoundError, match="hash does not match"):
        lk.utils.get_file("mnist.npz", origin, file_hash="0" * 64, cache_dir=cache)


def test_get_file_hashes(tmp_path):
    src = _write(tmp_path / "w.bin", b"weights")
    md5, sha = hashlib.md5(b"weights").hexdigest(), hashlib.sha256(b"weights").hexdigest()
    cache = tmp_path / "c"
    assert lk.utils.get_file(origin=src.as_uri(), md5_hash=md5, cache_dir=cache)
    assert lk.utils.get_file(origin=src.as_uri(), file_hash=sha, cache_dir=cache)
    # a cached copy that does not match is replaced from the local origin
    _write(cache / "datasets" / "w.bin", b"stale")
    assert open(lk.utils.get_file(origin=src.as_uri(), file_hash=sha, cache_dir=cache),
                "rb").read() == b"weights"
    with pytest.raises(ValueError, match="sha256 hash of .* does not match"):
        lk.utils.get_file("w2.bin", src.as_uri(), file_hash="1" * 64, cache_dir=cache)
    with pytest.raises(ValueError, match="hash_algorithm"):
        lk.utils.get_file(origin=src.as_uri(), file_hash=md5, hash_algorithm="sha1",
                          cache_dir=cache)


def test_get_file_extracts_tar_and_zip(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("pkg/readme.txt")
        info.size = 2
        tar.addfile(info, io.BytesIO(b"hi"))
    tgz = _write(tmp_path / "src" / "pkg.tar.gz", buf.getvalue())
    cache = tmp_path / "c"
    out = lk.utils.get_file(origin=tgz.as_uri(), extract=True, cache_dir=cache)
    # Keras's names: no fname -> the archive is '<name>_archive', extracted to '<name>'
    assert out == os.fspath(cache / "datasets" / "pkg.tar.gz")
    assert open(os.path.join(out, "pkg", "readme.txt")).read() == "hi"
    assert (cache / "datasets" / "pkg.tar.gz_archive").is_file()
    # with a dotted fname the archive keeps it and the directory is '<stem>_extracted'
    named = lk.utils.get_file("pkg.tar.gz", tgz.as_uri(), untar=True, cache_dir=tmp_path / "d")
    assert named == os.fspath(tmp_path / "d" / "datasets" / "pkg_extracted")
    assert open(os.path.join(named, "pkg", "readme.txt")).read() == "hi"
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w") as zf:
        zf.writestr("a/b.txt", "zip")
    z = _write(tmp_path / "src" / "z.zip", zbuf.getvalue())
    zout = lk.utils.get_file("z.zip", z.as_uri(), extract=True, cache_dir=cache)
    assert open(os.path.join(zout, "a", "b.txt")).read() == "zip"
    evil = io.BytesIO()
    with zipfile.ZipFile(evil, "w") as zf:
        zf.writestr("../escape.txt", "no")
    e = _write(tmp_path / "src" / "evil.zip", evil.getvalue())
    with pytest.raises(ValueError, match="outside the target"):
        lk.utils.get_file("evil.zip", e.as_uri(), extract=True, cache_dir=cache)
    assert not (cache / "datasets" / "escape.txt").exists()


def test_get_file_argument_errors(tmp_path):
    with pytest.raises(ValueError, match="origin"):
        lk.utils.get_file("x.csv", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="paths are not accepted"):
        lk.utils.get_file("sub/x.csv", "file:///x.csv", cache_dir=tmp_path)
    with pytest.raises(ValueError, match="can't parse the file name"):
        lk.utils.get_file(origin="https://example.com/", cache_dir=tmp_path)
    with pytest.raises(FileNotFoundError, match="origin file .* does not exist"):
        lk.utils.get_file(origin=(tmp_path / "missing.csv").as_uri(), cache_dir=tmp_path)
