#!/usr/bin/env bash
# LeNet on Fashion-MNIST: images/s of 1 worker (the plain Trainer, BLAS on all
# cores) against N in-process workers (the actor runtime) at the same global
# batch, plus the communication left exposed after backward.
#   bench/data_parallel.sh BUILD_DIR [limit_train] [repeats]
set -euo pipefail
build=${1:-build}
limit=${2:-19200}
repeats=${3:-2}
train="$build/apps/taihu-train"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(--config-file=config/lenet-fashion.ini epochs=1 data.limit_train=$limit data.limit_test=1000
        output.dir=$out output.checkpoint= output.metrics= --progress=quiet --log-level=warn)
run() {
  local name=$1
  shift
  for i in $(seq "$repeats"); do
    "$train" "${common[@]}" "$@" --report="$out/r.json"
    python3 - "$name" "$out/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[2]))
print(f"{sys.argv[1]:44s} {r['images_per_second']:8.0f} img/s  exposed comm {r.get('exposed_comm_seconds', 0):6.3f} s  hidden {r.get('comm_hidden_fraction', 0):.2f}  "
      f"buckets {[b['algorithm'] for b in r.get('buckets', [])]}")
PY
  done
}
run "1 worker, batch 64" batch_size=64
run "2 workers x 32, bucket_mb 0.5" workers=2 batch_size=32 sync.bucket_mb=0.5
run "2 workers x 32, one bucket" workers=2 batch_size=32 sync.bucket_mb=0
run "4 workers x 16, bucket_mb 0.5" workers=4 batch_size=16 sync.bucket_mb=0.5
run "2 workers x 32, bucket_mb 0.5, stealing" workers=2 batch_size=32 sync.bucket_mb=0.5 sync.scheduler=stealing
