"""``python -m engine`` from a checkout: the old name of the ``pipelab`` command, kept so older
scripts and notes still work. It says where the command moved, on stderr, and runs it."""

import sys

from pipelab.cli import main

print("note: `python -m engine` is now `pipelab` (or `python -m pipelab`); running it as that.", file=sys.stderr)
raise SystemExit(main())
