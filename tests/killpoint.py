"""A lakegate command that kills itself at a chosen point, for crash tests: ``python -m tests.killpoint POINT N
lakegate-arguments...`` runs ``lakegate lakegate-arguments...`` and sends itself SIGKILL the Nth time it reaches
POINT:

- ``files``: a lake write has written (and closed) its data files, before the commit that would reference them;
- any other name ``module:Class.method``: right after that method returns (an upkeep step, say).
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
from typing import Any

from lakegate.cli import main


def arm(point: str, n: int) -> None:
    if point == "files":
        point = "lakegate.connectors.iceberg.datafiles:DataFileStream.close"
    module_name, _, attr = point.partition(":")
    owner: Any = importlib.import_module(module_name)
    *path, name = attr.split(".")
    for part in path:
        owner = getattr(owner, part)
    original = getattr(owner, name)
    reached = 0

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        nonlocal reached
        result = original(*args, **kwargs)
        reached += 1
        if reached == n:
            print(f"killpoint: {point} reached {n} time(s), killing myself", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    setattr(owner, name, wrapper)


if __name__ == "__main__":
    arm(sys.argv[1], int(sys.argv[2]))
    sys.exit(main(sys.argv[3:]))
