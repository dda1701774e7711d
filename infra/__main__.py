"""Pulumi.yaml (`main: infra/`) and `python -m infra` both run this file: under the Pulumi engine (a
resource monitor is configured) the program (`infra.program`), otherwise the command line (`infra.cli`).
"""

import os
import sys

if not __package__:  # run by path (the Pulumi language host): make `import infra` resolve
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


try:  # heavy, optional: the CLI runs without the infra extra
    from pulumi.runtime.settings import get_monitor
except ImportError:
    get_monitor = None

if get_monitor is not None and get_monitor() is not None:
    import pulumi

    from infra import program
    from infra.catalog import load_catalog

    program.run(program.engine_config(), pulumi.get_stack(), load_catalog())
elif __name__ == "__main__":
    from infra.cli import main

    sys.exit(main())
