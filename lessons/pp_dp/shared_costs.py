"""Theory for the all-reduce at the flush against after each stage's last backward, at one set of costs.

Each of the page's runs is simulated at its own measured costs. Its F and B differ from the
other run's on a busy shared host, and so did its all-reduce while each run timed its own at
set-up (4.8 against 9.7 ms for one stage in one launch; a launch's plays now share one timing,
engine/runtime/gradient_reduce.py): the ratio of the two runs' simulations, each at its own
costs, fell below 1 (0.989x in a student walk) where the placements alone can only lengthen the step.
This plays both placements on the same costs: each stage's F and B, the link and each stage's
all-reduce, the two runs' means. At one set of costs the flush waits for stage 0, the last to
finish its backward, so every all-reduce starts at least as late as after its own backward:
the ratio is at least 1 (DeepSpeed's flush against Megatron-LM's placement, arXiv 2104.04473).
The engine's time between actions and the optimizer update are left out: both placements pay
them alike, so they move the ratio's two steps, not which is longer."""

from __future__ import annotations

import statistics

from pipelab.engine.schedules import build_schedule
from pipelab.engine.schedules.data_parallel import AFTER_BACKWARD, AT_FLUSH, with_gradient_reduce
from pipelab.engine.theory.simulate import CostModel, simulate


def shared_cost_model(*results) -> CostModel:
    """Per stage, the mean over ``results`` (runs of one layout) of its measured F, B, I and W
    and of its all-reduce's set-up timing; the mean link."""
    def mean(values) -> tuple[float, ...]:
        return tuple(statistics.fmean(stage) for stage in zip(*values))

    costs = [r.metrics.costs_s for r in results]
    return CostModel(forward=mean(c.forward for c in costs), backward=mean(c.backward for c in costs),
                     backward_input=mean(c.backward_input for c in costs),
                     backward_weight=mean(c.backward_weight for c in costs),
                     reduce=mean(r.data_parallel.reduce_cost_s for r in results),
                     link=statistics.fmean(r.metrics.link_cost_s for r in results))


def step_at(result, placement: str, cost: CostModel) -> float:
    """The simulated step of ``result``'s pipeline with each stage's all-reduce at ``placement``."""
    base = build_schedule(result.schedule.name, result.config.stages, result.schedule.num_microbatches)
    return simulate(with_gradient_reduce(base, placement), cost).step_time()


def flush_over_backward(flush, backward) -> float:
    """Theory's step at the flush ÷ after each stage's last backward, both at the two runs' mean
    costs (shared_cost_model): at least 1."""
    cost = shared_cost_model(flush, backward)
    return step_at(flush, AT_FLUSH, cost) / step_at(backward, AFTER_BACKWARD, cost)


__all__ = ["flush_over_backward", "shared_cost_model", "step_at"]
