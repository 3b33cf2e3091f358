"""Entry point of the frozen (PyInstaller) build: the same as ``lanemon``.

``multiprocessing.freeze_support()`` must run first so that worker processes
started from the frozen executable run their job instead of a second window.
"""

import multiprocessing
import sys

if __name__ == "__main__":
    multiprocessing.freeze_support()
    from lanemon.cli import main

    sys.exit(main())
