"""The command line of a browser benchmark script: one whole-number flag (how many runs or
rounds), progress lines on stderr, the measured numbers as JSON on stdout."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Callable


def json_main(description: str, flag: str, default: int, measure: Callable[..., dict], argv=None) -> int:
    """Parses ``flag`` (a whole number >= 1, ``default`` when absent), calls ``measure(count, log=...)`` and
    prints its result as JSON."""
    parser = argparse.ArgumentParser(description=description)
    count = parser.add_argument(flag, type=int, default=default)
    args = parser.parse_args(argv)
    if getattr(args, count.dest) < 1:  # else a median of nothing, after the browser started
        parser.error(f"{flag} must be at least 1, got {getattr(args, count.dest)}")
    out = measure(getattr(args, count.dest), log=lambda s: print(s, file=sys.stderr, flush=True))
    print(json.dumps(out, indent=1))
    return 0
