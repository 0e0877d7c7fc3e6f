#!/usr/bin/env bash
# Packs what a lent many-core machine needs to run bench/lease_scaling.sh: the
# benchmark binaries built here (portable Release, no -march=native), the shared
# libraries they load that such a machine need not have (CAF, OpenBLAS, oneDNN,
# spdlog, ...; not glibc itself), and the allocators PyTorch is probed under
# (tcmalloc, jemalloc). xz keeps it under the lent machine's 64 MiB transfer limit
# (OpenBLAS and oneDNN alone are 74 MB uncompressed).
#
#   bash bench/lease_bundle.sh [BUILD_DIR] [OUT_FILE]     (default build, .lease/bundle.tar.xz)
#
# OUT_FILE's folder is kept out of git (info/exclude), so that it travels with
# the working tree only when the device call names it in `carry`.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
out=${2:-.lease/bundle.tar.xz}
binaries=(bench_train bench_graph_train_actors make_tree_workload)
# The C library and its loader come from the lent machine: a bundled glibc would
# have to match its loader. Everything else travels.
system='^(linux-vdso|libc\.so|libm\.so|libpthread\.so|libdl\.so|librt\.so|ld-linux)'

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib" "$stage/alloc"
for b in "${binaries[@]}"; do
  [[ -x $build/bench/$b ]] || { echo "$build/bench/$b missing: build it first (ninja -C $build $b)" >&2; exit 1; }
  cp "$build/bench/$b" "$stage/bin/"
done
ldd "${binaries[@]/#/$build/bench/}" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u |
  while read -r soname path; do
    [[ $soname =~ $system ]] || cp -L "$path" "$stage/lib/$soname"
  done
for soname in libtcmalloc_minimal.so.4 libjemalloc.so.2; do
  path=$(ldconfig -p | awk -v n="$soname" '$1 == n && !found { print $NF; found = 1 }')
  if [[ -n $path ]]; then cp -L "$path" "$stage/alloc/$soname"; else echo "note: $soname not installed here, not bundled"; fi
done
{ git rev-parse HEAD; git status --porcelain | grep -v '^??' || true; } >"$stage/built_from.txt"

mkdir -p "$(dirname "$out")"
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx "/$(dirname "$out")/" "$exclude" 2>/dev/null || echo "/$(dirname "$out")/" >>"$exclude"
tar -C "$stage" -cf - . | xz -T0 -6 >"$out"
echo "$out: $(du -h "$out" | cut -f1) ($(ls "$stage/lib" | wc -l) libraries, allocators: $(ls "$stage/alloc" | tr '\n' ' '))"
