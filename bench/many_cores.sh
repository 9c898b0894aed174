#!/bin/bash
# One call on a lent many-core machine (16 cores, say): five clicks of every lesson button with
# pinned ranks, then the core-per-rank comparison at p = 4, into one report: $OUT/MANY_CORES.md
# (+ .json, log.txt); then, with a core per rank, ZB-H2's overlapped bubble against its barrier
# bubble at the command line's defaults, in $OUT/OVERLAP.md, and the executor's time between
# actions there, in $OUT/EXECUTOR.md; then a message's wake-up, sleeping receivers against polling
# ones, in $OUT/WAKE.md; last, whether its first four cores run at one speed, in $OUT/CORE_SPEED.md.
# Commit them as bench/MANY_CORES.md, bench/OVERLAP-many-cores.md, bench/EXECUTOR-many-cores.md,
# bench/WAKE-many-cores.md and bench/CORE_SPEED-many-cores.md (docs/measuring.md). The targets'
# parts come first: where a part runs out of time, the last ones are lost.
# Under 8 minutes: the clicks stop after CLICKS_LIMIT seconds and the report keeps the clicks
# made; the comparison stops after CPR_LIMIT seconds, the overlap after OVERLAP_LIMIT, the
# executor's costs after EXECUTOR_LIMIT, the wake-up after WAKE_LIMIT, the cores' speeds after
# SPEED_LIMIT. A part stopped at its limit gets one SIGINT (its process alone: --foreground), so
# its own cleanup runs (its ranks and temp folders go with it), and SIGKILL 5 s later if it is
# still there. Needs requirements.txt's
# packages (bench/clicks.py builds clicks as the page does).
cd "$(dirname "$0")/.." || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH} PIPELAB_PIN=1
PY=${PY:-python3}
OUT=${OUT:-bench/out/many_cores}
WORK=$(mktemp -d)
mkdir -p "$OUT"
lscpu 2>/dev/null | grep -E '^(Model name|CPU\(s\)|Thread|Core|Socket)'
$PY -c "import os, torch; print('torch', torch.__version__, 'affinity', len(os.sched_getaffinity(0)))"
timeout --foreground -s INT -k 5 "${CLICKS_LIMIT:-185}" $PY -m bench.clicks --clicks 5 --out "$WORK/CLICKS.md" --json "$WORK/clicks.json" \
  2>&1 | tee "$OUT/log.txt"
timeout --foreground -s INT -k 5 "${CPR_LIMIT:-60}" $PY -m bench.core_per_rank --rounds 2 --stages 4 --out "$WORK/CORE_PER_RANK.md" \
  2>&1 | tee -a "$OUT/log.txt"
$PY -m bench.many_cores "$WORK" --out "$OUT/MANY_CORES.md" 2>&1 | tee -a "$OUT/log.txt"
timeout --foreground -s INT -k 5 "${OVERLAP_LIMIT:-60}" $PY -m bench.overlap --pair zb-h2-cli --rounds 2 --out "$OUT/OVERLAP.md" \
  2>&1 | tee -a "$OUT/log.txt"
timeout --foreground -s INT -k 5 "${EXECUTOR_LIMIT:-30}" $PY -m bench.executor_costs --rounds 2 --no-floor --out "$OUT/EXECUTOR.md" \
  2>&1 | tee -a "$OUT/log.txt"
timeout --foreground -s INT -k 5 "${WAKE_LIMIT:-50}" $PY -m bench.wake --pings 1000 --runs 2 --clicks 1 --out "$OUT/WAKE.md" \
  2>&1 | tee -a "$OUT/log.txt"
timeout --foreground -s INT -k 5 "${SPEED_LIMIT:-35}" $PY -m bench.core_speed --windows 6 --seconds 1 --gap 1 --out "$OUT/CORE_SPEED.md" \
  2>&1 | tee -a "$OUT/log.txt"
rm -rf "$WORK"
ls -la "$OUT"
