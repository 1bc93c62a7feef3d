#!/usr/bin/env bash
# Loopback demo of a real deployment: one server, four device processes on 127.0.0.1.
# Usage: examples/deploy_demo.sh [CONFIG] [STATE_DIR]   (PY=python to choose the interpreter)
set -euo pipefail
PY=${PY:-python3}
CONFIG=${1:-examples/deploy.yaml}
STATE=${2:-runs/deploy_demo}
PORT=${PORT:-8765}
export FEDFIT_SECRET=${FEDFIT_SECRET:-demo-secret-$RANDOM$RANDOM}
export OMP_NUM_THREADS=1
rm -rf "$STATE" && mkdir -p "$STATE"
$PY -m fedfit.cli server "$CONFIG" --state "$STATE" --port "$PORT" >"$STATE/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
URL=http://127.0.0.1:$PORT
DEVICES=()
i=0
for spec in "flagship_phone 8GB" "midrange_phone 4GB" "older_phone 2GB" "smartwatch 600MB"; do
  set -- $spec
  $PY -m fedfit.cli device --server "$URL" --shard "$i/4" --tier "$1" --memory-limit "$2" \
    >"$STATE/device$i-$1.log" 2>&1 &
  DEVICES+=($!)
  i=$((i + 1))
done
wait "$SERVER"
for pid in "${DEVICES[@]}"; do wait "$pid" || true; done
echo "== what each device chose, and why (from its own monitor) =="
for log in "$STATE"/device*.log; do
  echo "-- $(basename "$log" .log)"
  grep -E "micro-batch|declined|refused|run finished" "$log" | head -4
done
echo "== server =="
cat "$STATE/server.log"
$PY -c "import json,sys; s=json.load(open(sys.argv[1])); print({k: s[k] for k in ('rounds','final_accuracy','time_to_target_s','failures_by_cause')})" "$STATE/run/summary.json"
