"""The command line: ``pipelab list | simulate | run | export`` (``python -m pipelab``)."""
