import subprocess
import sys

from layerkit._core import memory


def test_tuning_applies_on_glibc_and_can_be_undone():
    applied = memory.tune_malloc()
    assert applied == memory._apply(memory._TUNED)
    if applied:
        assert memory.restore_malloc_defaults()
        assert memory.tune_malloc()


def test_import_changes_malloc_only_when_the_environment_opts_in():
    code = ("import layerkit._core.memory as m, unittest.mock as um\n"
            "with um.patch.object(m, 'tune_malloc') as t:\n"
            "    m.tune_on_import(); print(t.called)\n")
    for env, expected in (({"LAYERKIT_MALLOC_TUNING": "1"}, "True"), ({}, "False"),
                          ({"LAYERKIT_MALLOC_TUNING": "0"}, "False")):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**_base_env(), **env}, check=True)
        assert out.stdout.strip() == expected


def _base_env():
    import os

    return {k: v for k, v in os.environ.items() if k != "LAYERKIT_MALLOC_TUNING"}


def test_config_exposes_the_opt_in_and_its_undo():
    import layerkit as lk

    assert lk.config.tune_malloc is memory.tune_malloc
    assert lk.config.restore_malloc_defaults is memory.restore_malloc_defaults
