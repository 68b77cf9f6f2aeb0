#!/usr/bin/env bash
# Every (system, seed) of one horses scale as its own process, all at once on one accelerator, then the records
# packed. How docs/horses.md's "At SEAL's protocol" runs were made (one H100):
#
#   bash experiments/horses_parallel.sh seal "fcn dvn seal-regression seal-regression-w seal-nce implicit-cd" "0 1 2" \
#     DATA_DIR OUT_DIR
#
# Each run is `python -m experiments.reproduce_horses --scale=SCALE --systems=S --seeds=K --no_table`, stopped after
# RUN_TIMEOUT seconds (default 520: a stopped run writes no record); a run with a record is skipped. The records
# land in docs/horses/runs_SCALE/ and, with the logs and each run's per-epoch metrics, in OUT_DIR/runs.tgz. Build the
# tables afterwards with `python -m experiments.reproduce_horses --table_only`.
set -uo pipefail
scale=$1; systems=$2; seeds=$3; data_dir=$4; out=$5
work=${WORKDIR:-/tmp/horses_parallel}
mkdir -p "$work/logs" "$out"
# Several processes share one GPU: each takes memory as it needs it instead of 75% of the card up front.
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
for system in $systems; do
  for seed in $seeds; do
    timeout "${RUN_TIMEOUT:-520}" python -m experiments.reproduce_horses --scale="$scale" --systems="$system" \
      --seeds="$seed" --data_dir="$data_dir" --workdir="$work/runs" --no_table \
      > "$work/logs/$system-$seed.log" 2>&1 &
  done
done
wait
ls "docs/horses/runs_$scale" 2>/dev/null | wc -l | xargs echo "records:"
tar czf "$out/runs.tgz" "docs/horses/runs_$scale" "$work/logs" $(find "$work/runs" -name 'metrics.jsonl') 2>/dev/null
tail -n 3 "$work"/logs/*.log
