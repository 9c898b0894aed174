"""The engine's error messages as data: a code, its values, and the English sentence.

The command line prints the English (it has no language). A page in another language looks
up the code in its catalog (``error.<code>`` in lessons/i18n/zh.json) and fills in the same
values, so a student reads the whole reason in the page's language. ``Message`` is a str
(the English line), so everything that shows, compares or logs errors as text keeps working.
"""

from __future__ import annotations

import re

MESSAGES: dict[str, str] = {
    # run settings (engine/config.py, engine/schedules/base.py)
    "whole_number": "{knob} must be a whole number >= 1, got {got}",
    "at_most": "{knob} is at most {cap} on this server, got {got}",
    "unknown_model": "unknown model {got}; valid models: {valid}",
    "unknown_device": "unknown device {got}; valid devices: {valid}",
    "unknown_transport": "unknown transport {got}; valid: {valid}",
    "unknown_partition": "unknown partition {got}; valid: {valid}",
    "unknown_runtime": "unknown runtime {got}; valid: {valid}",
    "heads": "hidden ({hidden}) must be a multiple of heads ({heads})",
    "lr": "lr must be in (0, 10), got {got}",
    "time_limit": "time limit must be in (0, {cap}] seconds, got {got}",
    "layers": "{stages} stages (p={p} x v={v}) need at least as many layers, but the {model} model has {have}: "
              "raise the layers or lower the stages",
    "check_async": "--check compares with synchronous training; {schedule} updates asynchronously",
    "clip_positive": "clip-grad-norm must be > 0 (inf only skips non-finite steps), got {got}",
    "clip_async": "clip-grad-norm clips a synchronous step's gradient; {schedule} updates per micro-batch without one",
    "inject_needs_clip": "inject-nonfinite needs clip-grad-norm (the step check runs with it; inf only skips)",
    "inject_step": "inject-nonfinite must be a step in 0..{last}, got {got}",
    "custom_needs_text": "schedule 'custom' needs the per-rank action lists (custom_schedule)",
    "custom_needs_file": "--schedule custom needs --custom FILE with one line of actions per rank",
    "torchrun_world": "torchrun started {world} processes but the run needs {ranks} "
                      "(--nproc-per-node x nodes must equal --stages x --data-parallel)",
    # data parallelism (engine/config.py, engine/schedules/data_parallel.py)
    "world_cap": "data-parallel d={d} x stages p={p} = {world} processes, at most {cap} on this server",
    "unknown_reduce_at": "unknown reduce placement {got}; valid: {valid}",
    "global_split": "a global batch of {total} micro-batches does not split into d={d} replicas of equal "
                    "micro-batches (global % d == 0)",
    "dp_async": "{schedule} updates inside the step, so its d={d} replicas would drift apart: data parallelism "
                "runs synchronous schedules only",
    "dp_needs_reduce": "data-parallel d={d} needs one R action per stage (like 0R0) after its last backward in "
                       "the custom schedule",
    "microbatches_flag": "give either --microbatches (per replica) or --global-microbatches (split over "
                         "--data-parallel replicas), not both and not neither",
    "dp_unsupported": "{knob} does not run with data parallelism yet (d={d}): use d=1 or leave it out",
    # PipeDream's replicated stages (engine/config.py, engine/schedules/replication.py)
    "counts_text": "{knob} must be one whole number per stage, like 2,1,1, got {got}",
    "stage_layers": "stage-layers {text} must give each of the {stages} stages at least 1 layer and sum to the "
                    "{model} model's {layers} layers",
    "replicas_length": "replicas {text} gives {got} counts but the pipeline has {stages} stages: one count per stage",
    "replicas_count": "every stage needs at least 1 replica, got {got} in {text}",
    "replicas_world": "replicas {text} need {world} workers, at most {cap} on this server",
    "replicas_chunks": "{schedule} places v={v} stages on each device; replicated stages run with one stage per "
                       "device (gpipe, 1f1b, zb-h1, zb-h2, pipedream)",
    "replicas_microbatches": "replicas {text}: a stage on {most} workers needs at least {most} micro-batches a step, "
                             "got m={m}",
    "replicas_async": "{schedule} updates every few micro-batches, and replicas {text} of a stage would each "
                      "update on their own gradient: replicated stages run the synchronous schedules and pipedream",
    "replicas_async_rounds": "{schedule} with replicas {text} updates once per round of one micro-batch on each "
                             "replica: m={m} must be a multiple of {r}",
    "replicas_custom": "a custom schedule places every action itself: it does not run with replicas {text}",
    "replicas_unsupported": "{knob} does not run with replicated stages yet ({text}): leave one of them out",
    # schedules and their constraints (engine/schedules, lessons.Knobs)
    "unknown_schedule": "unknown schedule {got}; valid schedules: {valid}",
    "not_a_schedule": "schedule {got} is not one of {valid}",
    "chunks_unused": "chunks={chunks} only applies to {schedules}",
    "chunks_rule": "{schedule} takes chunks {rule}, got {got}",
    "any_chunks": "any v >= 1",
    "fixed_chunks": "{schedule} places exactly 2 chunks per rank (chunks=2), got {got}",
    "multiple": "{schedule} needs micro-batches to be a multiple of stages (m % p == 0), got m={m}, p={p}",
    "multiple_updates": "{schedule} updates every p micro-batches, so m must be a multiple of stages "
                        "(m % p == 0), got m={m}, p={p}",
    "pass_cost": "{knob} must be a finite number >= 0 (and T_F + T_I + T_W > 0), got {got}",
    "weight_memory": "weight-memory is a share of a micro-batch's activations, at most 1, got {got}",
    "memory_limit": "{schedule} cannot fit its memory limit of {limit} micro-batches per device",
    "two_p": "{schedule} needs at least twice as many micro-batches as stages (m >= 2p = {two_p}), got m={m}",
    # a schedule's rules (engine/theory/validate.py, engine/theory/simulate.py, engine/actions.py)
    "at_step": "rank {rank}, action {step}: {rule}",
    "at_line": "line {line}: {rule}",
    "unknown_kind": "unknown action kind {got}; valid kinds: {valid}",
    "negative_index": "stage and micro-batch must be >= 0, got {stage}, {microbatch}",
    "bad_action": "cannot parse action {got}: expected <stage><kind><microbatch> like 1F3, kind one of {valid}",
    "no_work": "a schedule needs at least one stage and one micro-batch",
    "rank_programs": "expected {expected} rank programs, got {got}",
    "rank_without_stage": "every rank must hold at least one stage",
    "stage_range": "{action} names stage {stage} but there are only {stages} stages",
    "microbatch_range": "{action} names micro-batch {microbatch} but there are only {microbatches}",
    "wrong_rank": "{action}: stage {stage} lives on rank {owner}, not rank {rank}",
    "wrong_replica": "{action}: stage {stage} has {replicas} replicas and micro-batch {microbatch} goes to rank "
                     "{owner} (round-robin), not rank {rank}",
    "twice": "{action} is computed twice in one step",
    "before_forward": "{action} comes before its forward {forward}",
    "already_split": "{action}: this backward was already split into I and W",
    "already_full": "{action}: this micro-batch already had a full backward B",
    "before_input_grad": "{action} comes before its input-gradient backward {input_grad}",
    "update_before_backward": "{action} updates before the backward of micro-batch {microbatch} on stage {stage}",
    "reduce_before_backward": "{action} reduces before the backward of micro-batch {microbatch} on stage {stage}: "
                              "R averages a stage's whole step of gradients",
    "reduce_missing": "{action} is missing: with data parallelism every stage reduces its gradients once per step",
    "reduce_async": "{action}: a schedule that updates inside the step (U) cannot reduce across replicas",
    "missing": "{action} is missing: every stage must run F and a backward for every micro-batch",
    "deadlock": "deadlock: every remaining rank waits on another ({waiting})",
    "rank_at": "rank {rank} at {action}",
    "empty_schedule": "the schedule is empty: write one line of actions per rank, like '0F0 0B0'",
    "line_count": "expected {expected} lines (one per rank), got {got}",
    "stage_gap": "stage {stage} appears on no rank: stages must be numbered 0..S-1 without gaps",
    "two_ranks": "{action}: stage {stage} appears on ranks {first} and {rank}; each stage lives on one rank",
    # torch.distributed.pipelining's CSV (engine/torch_bridge/csv_format.py)
    "torch_csv_async": "{schedule} updates inside the step (U actions); torch's CSV has no update action, "
                       "its runtime updates once after step(), so only synchronous schedules export",
    "torch_csv_placement": "{schedule} places stages on ranks {ours} but torch would infer {torch} from its rows",
    "torch_csv_cell": "cell {cell} (rank {rank}, column {column}): a compute-only torch CSV has only F, B, I, W "
                      "actions like 1F3 (or (a;b)OVERLAP_F_B) and a stage's REDUCE_GRAD like 2REDUCE_GRAD",
    # what torch's runtime does not take here (engine/torch_bridge/settings.py)
    "torch_overlap": "--runtime torch does not take --overlap-steps: torch's step() ends with a flush",
    "torch_clip": "--runtime torch does not take --clip-grad-norm: the step check is our executor's",
    "torch_recompute": "--runtime torch does not take --recompute: torch's stages keep their activations",
    "torch_device": "--runtime torch does not take --device: this runtime runs on CPU (gloo) here",
    # a run that did not finish (engine/runtime/rank_processes.py, app/runner/jobs.py)
    "cancelled": "run cancelled",
    "nothing_to_compare": "a side-by-side comparison needs at least one setting",
    "rounds_at_least_one": "a side-by-side comparison needs at least one round, got {rounds}",
    "expired": "run expired",
    "time_limit_reached": "time limit of {seconds} s reached; rank(s) {ranks} had not finished",
    "all_waiting": "no rank progressed for {seconds} s, all waiting ({waiting}); run stopped",
    "rank_waits": "rank {rank} waits on {on}",
    "hung": "rank {ranks} stopped making progress for {seconds} s (hung); run stopped",
    "rank_killed": "rank {rank} was killed by signal {signal} mid-run",
    "rank_exited": "rank {rank} exited with code {code} mid-run",
    "rank_failed": "rank {rank} failed: {detail}",
    "crashed": "{kind}: {detail}",
    # runs on a Ray cluster (app/runner/cluster.py)
    "no_cluster": "runs go to the Ray cluster at {address} (PIPELAB_RAY_ADDRESS), but it does not answer: {reason}",
    "node_lost": "the cluster machine running this run was lost mid-run ({reason}); press Run again",
    "cluster_too_small": "this run has {ranks} ranks and needs {ranks} free cores on one machine, but the "
                         "cluster's largest has {cores}",
    # a saved result (engine/results/schema.py)
    "schema_not_int": "result schema_version {version} is not a whole number; it cannot be read",
    "schema_newer": "result schema_version {version} is newer than this PipeLab reads (up to {known}); "
                    "update PipeLab to open it",
    "schema_missing": "saved result has no {what} field {name}; it cannot be read",
    "cannot_open": "run {run_id} cannot be opened here: {reason}",
    # the server's stored runs (app/runner/storage.py)
    "stored_unreadable": "The stored runs could not be read ({reason}); they were moved to {name} and a fresh "
                         "store started.",
    "stored_busy": "The stored runs are busy (the database is locked); try again in a moment.",
}
"""Code -> the English sentence, ``{name}`` filled from the message's values. A value that is
itself a Message is said in the page's language too; a tuple is a list (joined by ", ")."""

FIELD = re.compile(r"\{(\w+)\}")


def fields(template: str) -> set[str]:
    """The ``{name}`` placeholders of a template."""
    return set(FIELD.findall(template))


class Message(str):
    """One line an error says: the English text (the str itself), its ``code`` in MESSAGES
    and the ``values`` it was filled with. ``Message.of("multiple", schedule="interleaved",
    m=6, p=4)``; a message without a code (``Message.plain(text)``) is said as it is."""

    code: str
    values: tuple[tuple[str, object], ...]

    def __new__(cls, english: str, code: str = "", values: tuple[tuple[str, object], ...] = ()):
        self = super().__new__(cls, english)
        self.code, self.values = code, values
        return self

    @classmethod
    def of(cls, code: str, /, **values) -> "Message":
        template = MESSAGES[code]  # KeyError: a code with no sentence is a bug
        if fields(template) != set(values):
            raise TypeError(f"message {code!r} takes {sorted(fields(template))}, got {sorted(values)}")
        english = FIELD.sub(lambda m: _english(values[m.group(1)]), template)
        return cls(english, code, tuple(values.items()))

    @classmethod
    def plain(cls, text: str) -> "Message":
        return cls(text)

    def __reduce__(self):  # pickle the code and values too (a str subclass would lose them)
        return (Message, (str(self), self.code, self.values))


def _english(value: object) -> str:
    if isinstance(value, tuple):
        return ", ".join(map(_english, value))
    return str(value)


def message_of(err: BaseException) -> Message:
    """An exception's one-line reason as a Message: the coded one it was raised with, else
    its first line as it is (a Python or torch error has no code)."""
    coded = getattr(err, "message", None)
    if isinstance(coded, Message):
        return coded
    if err.args and isinstance(err.args[0], Message):
        return err.args[0]
    lines = str(err).strip().splitlines()
    return Message.plain(lines[0] if lines else type(err).__name__)


__all__ = ["MESSAGES", "Message", "fields", "message_of"]
