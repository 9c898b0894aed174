"""Where a schedule run on torch's runtime and on ours differ, and why, in a few sentences
built from the two runs' measured figures (issue 28: the playground's "both runtimes").

What differs, and where each clock sees it:

- **Between the actions.** torch's runtime runs its own SEND_F / RECV_F / SEND_B / RECV_B
  actions and, after each stage's last backward, REDUCE_GRAD, which divides the accumulated
  gradients by m (``scale_grads=True``). We time only its stages' ``forward_one_chunk``,
  ``backward_one_chunk`` and ``backward_weight_one_chunk`` (engine/torch_bridge/rank.py), so all of
  that lies between the timed actions, on the wall clock only. Ours posts its sends to shared
  memory and scales each micro-batch's loss inside its backward.
- **Inside the actions.** The same layers, but torch's stage calls also fetch their inputs
  from its receive buffers and keep their outputs for its sends.
- **The device clock** counts each action's own CPU time and the link (torch's is rebuilt
  from them, engine/torch_bridge/clock.py), so the time between actions is not on it.

The wall clock's step gap splits exactly into the two: each device's busy time per step
(inside) and its idle time (between). Plain data, no Streamlit; texts under ``runtime_diff.*``.
"""

from __future__ import annotations

from dataclasses import dataclass

from pipelab.lessons.i18n import join_sentences, text

NOISE = 0.03
"""Runs closer than this share of the larger step are a tie: about what the same run moves
by on a shared host (pipelab.lessons.comparison_verdict.NOISE)."""

SHARED_MEMORY = "shared memory"
"""Our CPU ranks' transport as RunResult.transport names it (engine/runtime/transport.py)."""


@dataclass(frozen=True)
class RuntimeFigures:
    """One run's measured figures, per step (median over the measured steps), in ms."""

    wall_step_ms: float
    wall_busy_ms: float
    """Mean over devices of the wall-clock time inside actions per step."""
    device_step_ms: float
    device_busy_ms: float
    """Mean over devices of the device-clock time inside actions per step."""
    link_ms: float
    """One message's one-way cost, measured by ping-pong."""
    transport: str
    """How its messages moved (RunResult.transport)."""

    @property
    def wall_between_ms(self) -> float:
        return self.wall_step_ms - self.wall_busy_ms

    @classmethod
    def of(cls, result) -> RuntimeFigures:
        """From a finished RunResult (engine/results/result.py)."""
        m = result.metrics
        wall, device = m.wall_step_time_s * 1e3, m.device_step_time_s * 1e3
        return cls(wall_step_ms=wall, wall_busy_ms=wall * (1 - m.wall_bubble_fraction), device_step_ms=device,
                   device_busy_ms=device * (1 - m.device_bubble_fraction), link_ms=m.link_cost_s * 1e3,
                   transport=result.transport or SHARED_MEMORY)


@dataclass(frozen=True)
class RuntimeDifference:
    where: str | None
    """"between" or "inside": where most of the wall clock's gap lies; None for a tie."""
    sentences: tuple[str, ...]
    lang: str = "en"

    @property
    def text(self) -> str:
        return join_sentences(self.lang, self.sentences)


def _ms(x: float) -> str:
    return f"{x:.1f}"


def _signed(x: float) -> str:
    return f"{x:+.1f}".replace("-", "−")


def _transport(name: str, lang: str) -> str:
    return text(lang, "runtime_diff.shared_memory") if name == SHARED_MEMORY else name


def runtime_difference(ours: RuntimeFigures, torch: RuntimeFigures, lang: str = "en") -> RuntimeDifference:
    """The wall clock's step on both runtimes, how much of the gap lies inside the actions
    and how much between them, why there, and the device clock beside it."""
    say = lambda key, **values: text(lang, f"runtime_diff.{key}", **values)  # noqa: E731
    gap = torch.wall_step_ms - ours.wall_step_ms
    inside = torch.wall_busy_ms - ours.wall_busy_ms
    between = torch.wall_between_ms - ours.wall_between_ms
    sentences = []
    if abs(gap) <= NOISE * max(ours.wall_step_ms, torch.wall_step_ms):
        where = None
        sentences.append(say("tie", torch=_ms(torch.wall_step_ms), ours=_ms(ours.wall_step_ms),
                             noise=f"{NOISE:.0%}"))
    else:
        where = "between" if abs(between) >= abs(inside) else "inside"
        sentences.append(say("slower" if gap > 0 else "faster", torch=_ms(torch.wall_step_ms),
                             ours=_ms(ours.wall_step_ms), gap=_ms(abs(gap))))
    sentences.append(say("split", inside=_signed(inside), between=_signed(between)))
    if where is not None:
        sentences.append(say(f"most_{where}"))
    sentences.append(say("between", link_torch=f"{torch.link_ms:.3f}", link_ours=f"{ours.link_ms:.3f}",
                         transport=_transport(ours.transport, lang),
                         between_torch=_ms(torch.wall_between_ms), between_ours=_ms(ours.wall_between_ms)))
    sentences.append(say("inside", busy_torch=_ms(torch.wall_busy_ms), busy_ours=_ms(ours.wall_busy_ms)))
    sentences.append(say("device", torch=_ms(torch.device_step_ms), ours=_ms(ours.device_step_ms),
                         busy_torch=_ms(torch.device_busy_ms), busy_ours=_ms(ours.device_busy_ms)))
    return RuntimeDifference(where, tuple(sentences), lang)


__all__ = ["NOISE", "RuntimeDifference", "RuntimeFigures", "runtime_difference"]
