"""The import DAG of DESIGN.md / STYLE.md: nothing lower imports anything higher."""
import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1] / "layerkit"

# package -> packages it must never import
_ABOVE_CORE = {"primitives", "autodiff", "layers", "models", "optimizers", "data", "checkpoint",
               "losses", "metrics", "callbacks", "initializers", "utils", "distribute"}
FORBIDDEN = {
    "_core": _ABOVE_CORE,
    "primitives": _ABOVE_CORE - {"primitives"},
    "autodiff": _ABOVE_CORE - {"primitives", "autodiff"},
    "data": _ABOVE_CORE - {"primitives", "data"},
    "checkpoint": _ABOVE_CORE - {"primitives", "autodiff", "checkpoint"},
    "layers": {"models", "data", "callbacks", "utils", "distribute"},
    # lk.utils sits below callbacks and models (the callbacks reuse its Progbar) and
    # reads models and layers by duck typing only.
    "utils": {"models", "layers", "callbacks", "optimizers", "losses", "metrics", "distribute"},
    "callbacks": {"models", "layers"},
    # metrics (a package, one family per file) run on NumPy values beside the models
    "metrics": {"layers", "models", "optimizers", "data", "checkpoint", "callbacks",
                "distribute"},
    # lk.distribute is reached only through layerkit._core.distribution (a seam)
    "models": {"distribute"},
    "optimizers": {"distribute"},
    # the top-level modules of the training vocabulary: op records and _core below them
    # (and saving.serialization_lib, imported inside their get/serialize functions)
    "losses": _ABOVE_CORE - {"primitives", "losses"},
    "initializers": _ABOVE_CORE - {"primitives", "initializers"},
    "regularizers": _ABOVE_CORE - {"primitives", "regularizers"},
}
# metrics and callbacks sit below the models but above losses and lk.utils.
FORBIDDEN["metrics"] |= {"utils", "initializers", "regularizers"}
FORBIDDEN["callbacks"] |= {"optimizers", "losses", "metrics", "data", "initializers",
                           "regularizers", "distribute"}

# module -> layerkit modules it must never import (finer than the packages above)
_MODEL_HALVES = {"layerkit.models.model", "layerkit.models.sequential",
                 "layerkit.models.functional_config", "layerkit.models.cloning"}
FORBIDDEN_MODULES = {
    # Model.summary() passes the model in; the table reads it by duck typing.
    "models/summary.py": _MODEL_HALVES | {"layerkit.models.trainer"},
    # Trainer is a mixin below Model (Keras 3's trainers/trainer.py): it never names it.
    "models/trainer.py": _MODEL_HALVES,
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
        # a package's files, or a top-level module (losses.py) as a package of one file
        pkg = rel[0] if len(rel) > 1 else path.stem
        modules = FORBIDDEN_MODULES.get("/".join(rel), ())
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] in HEAVY:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
            if any(name == m or name.startswith(m + ".") for m in modules):
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
            if parts[0] != "layerkit" or len(parts) < 2 or pkg not in FORBIDDEN:
                continue
            if parts[1] in FORBIDDEN[pkg]:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_kernels_import_numpy_and_each_other_only():
    # layerkit/kernels: NumPy arrays in, NumPy arrays out (the op records in primitives/ call
    # them); they import NumPy, the standard library and other kernels, nothing else but
    # the tuned constants of layerkit._core.tuning (a module that imports nothing).
    import sys

    bad = []
    for path in (ROOT / "kernels").rglob("*.py"):
        for name in _imports(path):
            top = name.split(".")[0]
            ok = (top in ("numpy", "__future__") or top in sys.stdlib_module_names
                  or name.startswith("layerkit.kernels")
                  or name in ("layerkit._core.tuning", "layerkit._core")
                  or name.startswith("layerkit._core.tuning."))
            if not ok:
                bad.append(f"{path.relative_to(ROOT)} imports {name}")
    assert not bad, "\n".join(bad)


def test_nothing_inside_layerkit_imports_lk_ops():
    # lk.ops is the user-facing Keras 3 namespace; op records live in layerkit.primitives.
    bad = [f"{path.relative_to(ROOT)} imports {name}"
           for path in ROOT.rglob("*.py") if path != ROOT / "__init__.py"
           for name in _imports(path)
           if name == "layerkit.ops" or name.startswith("layerkit.ops.")]
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


def test_top_level_modules_and_module_rules_are_checked():
    # The DAG check above covers the top-level modules and the module rules: each file
    # it names exists (a rename would otherwise silently drop its rule).
    for name in ("losses", "initializers", "regularizers"):
        assert (ROOT / f"{name}.py").is_file() and name in FORBIDDEN
    for name in ("metrics", "callbacks"):
        assert (ROOT / name / "__init__.py").is_file() and name in FORBIDDEN
    for rel in FORBIDDEN_MODULES:
        assert (ROOT / rel).is_file(), rel


def test_summary_and_model_import_no_cycle():
    # models.summary (imported by models.model) must not import models.model back; the
    # Trainer mixin is imported by models.model and must not import it either.
    names = set(_imports(ROOT / "models" / "summary.py"))
    assert not any(n.startswith("layerkit.models.model") for n in names), names
    names = set(_imports(ROOT / "models" / "trainer.py"))
    assert not any(n.startswith("layerkit.models.model") for n in names), names
def test_tuning_constants_import_nothing():
    # layerkit._core.tuning is imported by every layer, kernels included: numbers only.
    tree = ast.parse((ROOT / "_core" / "tuning.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    assert all(isinstance(n, (ast.Assign, ast.Expr)) for n in tree.body)
