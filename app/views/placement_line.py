"""Where a run's devices ran, in one line of the page's language: each on a core of its own
(engine/runtime/placement.py pins them where the host has the cores), or left to the OS and why;
and whether they waited for messages by polling (pinned, with a core to spare)."""

from __future__ import annotations

from pipelab.engine.results.records import Placement
from pipelab.engine.runtime.placement import POLL_S, cpu_list_text
from pipelab.lessons.i18n import text


def placement_text(placement: Placement, lang: str, checked: bool = True) -> str:
    """The Details line for ``placement`` (RunMetrics.placement) in ``lang``; ``checked``: the run
    had a gradient check (an asynchronous one has none, yet its launch still kept the core one
    would take: the walk read "4 devices and the gradient check" under "No gradient check")."""
    if not placement.pinned:  # unpinned ranks never poll (engine/runtime/placement.py)
        few = "results.placement_few_cores" if checked else "results.placement_few_cores_unchecked"
        key = {Placement.OFF: "results.placement_off", Placement.UNSUPPORTED: "results.placement_unsupported",
               Placement.GPU: "results.placement_gpu"}.get(placement.reason, few)
        return text(lang, key, cores=placement.cores, ranks=placement.ranks)
    polls = text(lang, "results.placement_polls", ms=f"{POLL_S * 1e3:g}") if placement.polls else ""
    devices = text(lang, "results.clause_sep").join(
        text(lang, "results.placement_device", device=r, cpus=cpu_list_text(cpus))
        for r, cpus in enumerate(placement.rank_cpus))
    key = "results.placement_shared" if placement.reason == Placement.SHARED_REFERENCE else "results.placement_pinned"
    line = text(lang, key, devices=devices, reference=cpu_list_text(placement.reference_cpus))
    return line + (text(lang, "results.placement_per_host") if placement.scope == Placement.PER_HOST else "") + polls
