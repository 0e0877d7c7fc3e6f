#!/usr/bin/env bash
# ResNet-50 training on a folder of JPEGs (bench/resnet50_images.ini: batch 8,
# 20 iterations, the ImageNet recipe through the actor feed): the share of
# training the worker waited for batches (report data.wait_share) and images/s,
# with DECODERS decoder actors (default "1 2"), alternating, ROUNDS rounds; and,
# as the reference without any decoding, the same run on synthetic data
# (decoders "synthetic": what the decoders' CPU time costs the training threads).
# Builds nothing.
#
#   bash bench/resnet50_wait_share.sh [BUILD_DIR] [ROUNDS]
#     IMAGES=FOLDER VAL=FOLDER   default BUILD_DIR/images/jpeg1000 and val40
#                                (written by bench/make_image_folder.py when missing)
#     ITERATIONS=20
# Writes bench/results/image_pipeline/resnet50_wait.jsonl (one row per run) and
# prints the medians.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-2}
images=${IMAGES:-$build/images/jpeg1000}
val=${VAL:-$build/images/val40}
iterations=${ITERATIONS:-20}
decoders_list=${DECODERS:-"1 2 synthetic"}
py=/usr/bin/python3
out=bench/results/image_pipeline
mkdir -p "$out" "$build/out"
rows=$out/resnet50_wait.jsonl
: >"$rows"
[[ -d $images ]] || $py bench/make_image_folder.py "$images" --images 1000 --classes 10 --seed 1
[[ -d $val ]] || $py bench/make_image_folder.py "$val" --images 40 --classes 10 --seed 2

# The synthetic reference: the same file with synthetic ImageNet-shaped data in [data].
synthetic=$build/out/resnet50_synthetic.ini
sed -n '1,/^\[data\]/p' bench/resnet50_images.ini | sed "s|^net = ../|net = $PWD/|" >"$synthetic"
printf 'source = synthetic\nshape = 3 224 224\nclasses = 10\ntrain_size = 1000\ntest_size = 40\nprefetch = 4\n\n' >>"$synthetic"
sed -n '/^\[solver\]/,$p' bench/resnet50_images.ini >>"$synthetic"

for ((r = 1; r <= rounds; r++)); do
  for d in $decoders_list; do
    echo "== round $r, decoders $d: $(uptime)" | tee -a "$out/load.log"
    report=$build/out/resnet50_wait_d${d}_r${r}.json
    # taihu picks its own OpenBLAS kernel (the VM forces Haswell on every process otherwise)
    if [[ $d == synthetic ]]; then
      env -u OPENBLAS_CORETYPE "$build/apps/taihu-train" --config-file="$synthetic" iterations="$iterations" \
        output.dir="$(realpath "$build/out")/resnet50-synthetic" --progress=quiet --report="$report"
    else
      env -u OPENBLAS_CORETYPE "$build/apps/taihu-train" --config-file=bench/resnet50_images.ini \
        data.train="$(realpath "$images")" data.test="$(realpath "$val")" data.decoders="$d" \
        iterations="$iterations" output.dir="$(realpath "$build/out")/resnet50-images" --progress=quiet --report="$report"
    fi
    $py - "$report" "$d" "$r" >>"$rows" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d = sys.argv[2]
print(json.dumps({"decoders": int(d) if d.isdigit() else d, "source": r["data"]["source"], "round": int(sys.argv[3]),
                  "iterations": r["iterations"],
                  "batch": r["batch_size"], "images_per_second": r["images_per_second"], "seconds": r["seconds"],
                  "wait_seconds": r["data"]["wait_seconds"], "wait_share": r["data"]["wait_share"],
                  "prefetch": r["data"]["prefetch"], "blas_kernel": r["blas_kernel"]}))
PY
    tail -1 "$rows"
  done
done

$py - "$rows" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print(f"{'decoders':>9} {'runs':>4} {'images/s':>9} {'wait share':>11} {'wait s':>7}")
for d in sorted({r["decoders"] for r in rows}, key=str):
    rs = [r for r in rows if r["decoders"] == d]
    m = lambda k: statistics.median(r[k] for r in rs)
    shares = ", ".join(format(r["wait_share"], ".4f") for r in rs)
    rates = ", ".join(format(r["images_per_second"], ".2f") for r in rs)
    print(f"{d:>9} {len(rs):4} {m('images_per_second'):9.2f} {m('wait_share'):11.4f} {m('wait_seconds'):7.2f}"
          f"   (images/s {rates}; wait shares {shares})")
PY
