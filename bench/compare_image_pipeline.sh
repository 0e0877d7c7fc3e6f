#!/usr/bin/env bash
# Image input pipeline, side by side: taihu (bench_image_pipeline: ImageDataset
# and the actor feed) against torchvision (bench/image_pipeline_torch.py: the
# PIL ImageFolder path, PIL with draft(), and torchvision.io's decode_jpeg with
# tensor transforms), the ImageNet training recipe on a folder of JPEGs, runs
# alternating (the order swaps every round) so that machine noise hits both.
# Builds nothing: build bench_image_pipeline first.
#
#   bash bench/compare_image_pipeline.sh [BUILD_DIR] [ROUNDS]
#     IMAGES=FOLDER   class folders of JPEGs (default BUILD_DIR/images/jpeg1000,
#                     written by bench/make_image_folder.py when missing)
#     THREADS="1 2"   threads / decoders / DataLoader workers to run
#
# Each side runs at its best here: glibc's malloc, which returns freed image
# buffers to the kernel, makes this VM's costly page faults slow PIL down, so
# both sides are first timed under every allocator installed (glibc, glibc
# with MALLOC_MMAP_THRESHOLD_ / MALLOC_TRIM_THRESHOLD_ raised, tcmalloc,
# jemalloc; bench/peer_at_its_best.sh; best of 2 alternating short runs each:
# taihu's ImageDataset on one thread, torchvision's PIL+draft DataLoader
# in-process) and each then runs under whichever was faster for it.
# torchvision's PIL ImageFolder out of the box (default environment) runs too,
# as a reference.
#
# Writes bench/results/image_pipeline/{taihu,pytorch}.{jsonl,csv} (one row per
# run; pytorch_default_env.* for the out-of-the-box PIL path), env.txt (the
# environments chosen), load.log (uptime per round), and summary.json (medians
# over rounds); prints the tables.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
rounds=${2:-5}
images=${IMAGES:-$build/images/jpeg1000}
threads=${THREADS:-"1 2"}
py=/usr/bin/python3   # Debian's python3-torch and python3-torchvision; another python3 on PATH may lack them
out=bench/results/image_pipeline
bin=$build/bench/bench_image_pipeline
[[ -x $bin ]] || { echo "missing $bin: ninja -C $build bench_image_pipeline" >&2; exit 1; }
mkdir -p "$out"
rm -f "$out"/taihu.* "$out"/pytorch.* "$out"/pytorch_default_env.* "$out"/calibration.jsonl  # stale rows would enter the medians

if [[ ! -d $images ]]; then
  $py bench/make_image_folder.py "$images" --images 1000 --classes 10 --quality 90 --seed 1
fi
list=$(echo $threads | tr ' ' ',')

# Neither side uses BLAS here; taihu runs without the VM's OPENBLAS_CORETYPE as
# everywhere (it picks its own kernel). torch.set_num_threads(1) is in the script.
source bench/peer_at_its_best.sh
pick_allocator env -u OPENBLAS_CORETYPE "$bin" --dir="$images" --cases=dataset --threads=1 --json=/dev/stdout
taihu_env=("${allocator_args[@]}") taihu_allocator=$best_allocator
pick_allocator $py bench/image_pipeline_torch.py --dir "$images" --variants pil-draft-u8 --cases loader --workers 0 \
  --json /dev/stdout
torch_env=("${allocator_args[@]}") torch_allocator=$best_allocator
{
  echo "taihu allocator: $taihu_allocator"
  echo "pytorch allocator: $torch_allocator"
} | tee "$out/env.txt"

taihu() {
  env -u OPENBLAS_CORETYPE "${taihu_env[@]}" "$bin" --dir="$images" --threads="$list" --decoders="$list" --batch=32 \
    --prefetch=4 --repeats=1 --label="round$1" --json="$out/taihu.jsonl" --csv="$out/taihu.csv"
}
pytorch() {
  env "${torch_env[@]}" $py bench/image_pipeline_torch.py --dir "$images" --variants pil,pil-draft,tvio,pil-draft-u8,tvio-u8 \
    --workers "0,$list" --batch 32 --repeats 1 --label "round$1" --json "$out/pytorch.jsonl" --csv "$out/pytorch.csv"
  # out of the box: torchvision's ImageFolder recipe, default environment
  $py bench/image_pipeline_torch.py --dir "$images" --variants pil --cases loader --workers "0,$list" --batch 32 \
    --repeats 1 --label "round$1" --json "$out/pytorch_default_env.jsonl" --csv "$out/pytorch_default_env.csv"
}

{
  echo "# $(date -u +%FT%TZ) $(uptime)"
  echo "# $(grep -m1 'model name' /proc/cpuinfo), $(nproc) cores"
  $py bench/image_pipeline_torch.py --dir "$images" --info | head -1
} | tee "$out/load.log"
for ((r = 1; r <= rounds; r++)); do
  echo "== round $r / $rounds: $(uptime)" | tee -a "$out/load.log"
  if ((r % 2 == 1)); then taihu $r; pytorch $r; else pytorch $r; taihu $r; fi
done
echo "# done $(date -u +%FT%TZ) $(uptime)" | tee -a "$out/load.log"

$py bench/summarize_image_pipeline.py "$out"
