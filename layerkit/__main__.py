"""``python -m layerkit``: print versions, BLAS, threads and platform (for bug reports)."""
import sys

from layerkit._info import main

if __name__ == "__main__":
    sys.exit(main())
