"""``python -m pipelab``: the same as the ``pipelab`` command."""

from pipelab.cli import main

raise SystemExit(main())
