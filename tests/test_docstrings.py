"""Every ``>>>`` example in layerkit's docstrings runs and prints what it shows.

One case per module that has examples. Examples that write files get a fresh
``tempfile`` directory under pytest's ``tmp_path``; none needs network or torch.
"""
import doctest
import importlib
import pathlib
import pkgutil
import re
import tempfile

import pytest

import layerkit

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_PROMPT = re.compile(r"^\s*>>>", re.M)


def _module_names() -> list[str]:
    names = ["layerkit"]
    names += [m.name for m in pkgutil.walk_packages(layerkit.__path__, "layerkit.")]
    return sorted(names)


def _doctests(module) -> list[doctest.DocTest]:
    tests = doctest.DocTestFinder(exclude_empty=True).find(module, module.__name__)
    return [t for t in tests if t.examples]


def _modules_with_prompts() -> list[str]:
    # Chosen from the source text, so a module whose examples the finder misses is still
    # collected (and then fails test_every_prompt_is_collected below).
    return [n for n in _module_names()
            if _PROMPT.search(pathlib.Path(importlib.import_module(n).__file__).read_text())]


MODULES = _modules_with_prompts()


def test_modules_found():
    # Guards against the discovery above silently finding nothing.
    assert len(MODULES) >= 30, MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    module = importlib.import_module(name)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in _doctests(module):
        runner.run(test, out=report.append, clear_globs=True)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} doctest failure(s) in {name}:\n" + "".join(report)


@pytest.mark.parametrize("name", MODULES)
def test_every_prompt_is_collected(name):
    """Each ``>>>`` line in the file belongs to an example doctest actually runs."""
    module = importlib.import_module(name)
    in_source = len(_PROMPT.findall(pathlib.Path(module.__file__).read_text()))
    collected = sum(len(t.examples) for t in _doctests(module))
    assert collected == in_source, (
        f"{name}: {in_source} '>>>' lines in the source but doctest collects {collected} "
        "examples (a docstring on an object whose __module__ differs, or a '>>>' outside "
        "a docstring?)")
