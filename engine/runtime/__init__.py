"""The real multi-process engine: launch the ranks, run their actions, measure, clean up."""
