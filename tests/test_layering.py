"""The import DAG of DESIGN.md / STYLE.md: nothing lower imports anything higher."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "layerkit"

# package -> packages it must never import
FORBIDDEN = {
    "_core": {"ops", "autodiff", "layers", "models", "optimizers", "data", "checkpoint",
              "losses", "metrics", "callbacks", "initializers", "distribute"},
    "ops": {"autodiff", "layers", "models", "optimizers", "data", "checkpoint", "losses",
            "metrics", "callbacks", "initializers", "distribute"},
    "autodiff": {"layers", "models", "optimizers", "data", "checkpoint", "losses", "metrics",
                 "callbacks", "initializers", "distribute"},
    "data": {"autodiff", "layers", "models", "optimizers", "checkpoint", "losses", "metrics",
             "callbacks", "initializers", "distribute"},
    "checkpoint": {"layers", "models", "optimizers", "data", "losses", "metrics", "callbacks",
                   "initializers", "distribute"},
    "layers": {"models", "data", "distribute"},
    # metrics (a package, one family per file) run on NumPy values beside the models
    "metrics": {"layers", "models", "optimizers", "data", "checkpoint", "callbacks",
                "distribute"},
    # lk.distribute is reached only through layerkit._core.distribution (a seam)
    "models": {"distribute"},
    "optimizers": {"distribute"},
}
HEAVY = {"torch", "tensorflow", "jax", "pickle", "cloudpickle", "dill"}


def _imports(path: pathlib.Path):
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
            for a in node.names:
                yield f"{node.module}.{a.name}"


def test_import_dag():
    bad = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT).parts
        pkg = rel[0] if len(rel) > 1 else None
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] in HEAVY:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
            if parts[0] != "layerkit" or len(parts) < 2 or pkg not in FORBIDDEN:
                continue
            if parts[1] in FORBIDDEN[pkg]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_import_layerkit_does_not_import_pyarrow():
    import subprocess
    import sys

    code = "import sys, layerkit; print('pyarrow' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_metrics_package_is_checked():
    # The metrics families live in a package, so the DAG check above walks each file.
    files = {p.name for p in (ROOT / "metrics").glob("*.py")}
    assert {"__init__.py", "base_metric.py", "confusion_metrics.py"} <= files
