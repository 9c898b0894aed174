#!/bin/bash
# One call on a lent GPU machine: bench.gpu_check, its report and runs into $OUT
# (report.md, report.json, runs.tgz, log.txt); then `python -m bench.gpu_publish` here.
# BUDGET: seconds after which no run starts; CHECK_LIMIT: the check's own hard limit.
cd "$(dirname "$0")/.." || exit 1
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
PY=${PY:-python3}
nvidia-smi -L 2>&1 | head -2
$PY -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
rm -rf /tmp/gc
timeout "${CHECK_LIMIT:-400}" $PY -m bench.gpu_check --budget "${BUDGET:-300}" --out /tmp/gc 2>&1 | tee "$OUT/log.txt"
cp /tmp/gc/report.md /tmp/gc/report.json "$OUT/" 2>/dev/null
tar czf "$OUT/runs.tgz" -C /tmp/gc runs 2>/dev/null
ls -la "$OUT"
