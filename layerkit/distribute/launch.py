"""``python -m layerkit.distribute.launch -n 4 train.py [args...]``: run a script on N ranks.

A thin wrapper around ``mpiexec -n N <this python> train.py args...``: it finds
``mpiexec`` (``--mpiexec PATH``, else the ``MPIEXEC`` environment variable, else next to
this Python, else on ``PATH``: the mpich wheel of ``layerkit[mpi]`` installs it there) and
replaces itself with it, so signals and the exit status are mpiexec's. Anything MPI
needs beyond the rank count goes after ``--mpiexec-args``, e.g.
``--mpiexec-args="-hosts a,b"``.

Threads: nothing is set here; each rank's ``MultiWorkerMirroredStrategy`` limits NumPy's
BLAS to its share of the machine's cores (see ``layerkit.distribute._mpi``).
"""
from __future__ import annotations

import argparse
import os
import shlex
import shutil
import sys


def find_mpiexec(explicit: str | None = None) -> str:
    """The path of ``mpiexec``.

    Raises:
        FileNotFoundError: none was found (the message says how to install one).
    """
    candidates = [explicit, os.environ.get("MPIEXEC"),
                  os.path.join(os.path.dirname(sys.executable), "mpiexec"),
                  shutil.which("mpiexec"), shutil.which("mpirun")]
    for c in candidates:
        if c and os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    raise FileNotFoundError(
        "lk.distribute.launch: no mpiexec found (looked at --mpiexec, $MPIEXEC, next to "
        f"{sys.executable} and on PATH); pip install 'layerkit[mpi]' installs mpich's, or "
        "point --mpiexec at your cluster's")


def command(argv: list[str]) -> list[str]:
    """The mpiexec command line for ``argv`` (this module's arguments)."""
    parser = argparse.ArgumentParser(
        prog="python -m layerkit.distribute.launch",
        description="Run a layerkit training script on N MPI ranks (mpiexec -n N python ...).")
    parser.add_argument("-n", "--np", type=int, required=True, dest="n",
                        help="number of ranks (processes)")
    parser.add_argument("--mpiexec", default=None, help="the mpiexec to use")
    parser.add_argument("--mpiexec-args", default="",
                        help="extra arguments for mpiexec (one string)")
    parser.add_argument("script", help="the Python script to run")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the script's arguments")
    ns = parser.parse_args(argv)
    if ns.n < 1:
        parser.error(f"-n must be >= 1, received {ns.n}")
    return [find_mpiexec(ns.mpiexec), "-n", str(ns.n), *shlex.split(ns.mpiexec_args),
            sys.executable, ns.script, *ns.args]


def main(argv: list[str] | None = None) -> None:
    cmd = command(sys.argv[1:] if argv is None else argv)
    sys.stdout.flush()
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    main()
