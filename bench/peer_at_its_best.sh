# Sourced by every comparison script: runs a peer (PyTorch, Open MPI) at its
# best on this machine, not as this VM happens to leave it.
#
#   source bench/peer_at_its_best.sh
#   pick_peer_best PROBE_COMMAND...     # PyTorch: allocator, then OpenBLAS kernel
#   pick_allocator PROBE_COMMAND...     # any peer: allocator only
#   pick_mpi_allocator BINARY MB MPIRUN...  # Open MPI's MPI_Allreduce (bench/mpi/allreduce_mpi.c)
#   allocator_env NAME                  # `env` arguments for one allocator
#   hold_to_isa                         # ISA=avx2: both sides held to AVX2
#
# PROBE_COMMAND must print a rate, higher is better, on stdout: its first
# "<number> <unit>/s", or else the last JSON "..._per_second": <number>. Each candidate runs twice, alternating, and
# keeps its better run (one short run is at the mercy of a VM's noise).
#
# The allocator. PyTorch's CPU allocator hands every tensor to malloc, so with
# glibc's each iteration pays fresh page faults for every large activation
# (glibc returns big blocks to the kernel on free); on these VMs a freshly
# touched page is very costly (torch.abs of 25 M floats: 43 ms with glibc,
# 16 ms with tcmalloc on a 2-core Xeon here; 160 vs 3 ms on a Zen 5 VM).
# PyTorch's own CPU tuning guide tells users to preload tcmalloc or jemalloc,
# so a comparison that leaves the peer on glibc's malloc flatters taihu.
# Candidates, where installed (libtcmalloc-minimal4, libjemalloc2):
#   glibc           the default
#   glibc-tuned     glibc with mmap/trim thresholds raised, so freed blocks stay
#   tcmalloc        Debian's libtcmalloc_minimal.so.4 preloaded
#   jemalloc        libjemalloc.so.2 preloaded, its defaults
#   jemalloc-tuned  jemalloc with the MALLOC_CONF of Intel's PyTorch CPU tuning
#                   guide (freed pages kept, background purging)
# ALLOCATOR=NAME skips the allocator probe.
#
# The OpenBLAS kernel. Some machines set OPENBLAS_CORETYPE for every process
# (this project's VM: Haswell, on an AVX-512 CPU), and OpenBLAS misdetects
# others (Emerald Rapids falls back to its generic kernel): neither side of a
# comparison runs under the environment's value unless it is the fastest.
# Forcing a kernel the CPU lacks would die with SIGILL, so only those the CPU
# has are tried. CORETYPE=NAME (or CORETYPE=unset) skips the kernel probe.
#
# The two are probed one after the other (allocator under OpenBLAS's own
# detection, then the kernel under the chosen allocator): one moves page
# faults, the other GEMM speed, and the full grid would take 40 runs.

# ISA=avx2 (hold_to_isa): both sides of a comparison as on an AVX2-only machine,
# without one: oneDNN (taihu's and PyTorch's) capped by DNNL_MAX_CPU_ISA and
# ONEDNN_MAX_CPU_ISA, PyTorch's own vectorised kernels by ATEN_CPU_CAPABILITY,
# OpenBLAS on its Haswell kernel for both (taihu_kernel, for taihu's --kernel
# or [blas] kernel). taihu's own multiversioned loops go no higher than AVX2.
# Anything else: each side at its best on this CPU (taihu_kernel=auto).
hold_to_isa() {
  taihu_kernel=auto
  case ${ISA:-native} in
    native) ;;
    avx2)
      export DNNL_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2
      CORETYPE=Haswell taihu_kernel=Haswell
      echo "Both sides held to AVX2: DNNL_MAX_CPU_ISA=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2, OpenBLAS Haswell" ;;
    *) echo "ISA=$ISA: expected native or avx2" >&2; return 2 ;;
  esac
}

# glibc's thresholds: blocks up to 64 MiB from the heap, freed memory trimmed above 256 MiB.
glibc_tuned_env="MALLOC_MMAP_THRESHOLD_=67108864 MALLOC_TRIM_THRESHOLD_=268435456"
jemalloc_tuned_conf="oversize_threshold:1,background_thread:true,metadata_thp:auto,dirty_decay_ms:9000000000,muzzy_decay_ms:9000000000"

shared_library() {  # soname: its path, if the dynamic loader knows it
  ldconfig -p 2>/dev/null | awk -v name="$1" '$1 == name { print $NF; exit }'
}

allocator_env() {  # NAME: prints the `env` arguments, one per line
  case $1 in
    glibc) ;;
    glibc-tuned) tr ' ' '\n' <<<"$glibc_tuned_env" ;;
    tcmalloc) echo "LD_PRELOAD=$(shared_library libtcmalloc_minimal.so.4)" ;;
    jemalloc) echo "LD_PRELOAD=$(shared_library libjemalloc.so.2)" ;;
    jemalloc-tuned)
      echo "LD_PRELOAD=$(shared_library libjemalloc.so.2)"
      echo "MALLOC_CONF=$jemalloc_tuned_conf" ;;
    *) echo "unknown allocator '$1' (glibc, glibc-tuned, tcmalloc, jemalloc, jemalloc-tuned)" >&2; return 2 ;;
  esac
}

installed_allocators() {
  local names=(glibc glibc-tuned)
  [[ -n $(shared_library libtcmalloc_minimal.so.4) ]] && names+=(tcmalloc)
  [[ -n $(shared_library libjemalloc.so.2) ]] && names+=(jemalloc jemalloc-tuned)
  echo "${names[@]}"
}

# probe_best LABEL BASE_ENV_NAME CANDIDATE_FUNCTION CANDIDATES -- COMMAND...
# CANDIDATE_FUNCTION NAME prints the `env` arguments that set candidate NAME.
# Sets probe_winner.
probe_best() {
  local label=$1 base_name=$2 candidate_env=$3
  shift 3
  local candidates=()
  while [[ $1 != -- ]]; do candidates+=("$1"); shift; done
  shift
  local -n base_env=$base_name
  local -A rate_of=()
  local round candidate rate best_rate=0 args
  for round in 1 2; do
    for candidate in "${candidates[@]}"; do
      mapfile -t args < <("$candidate_env" "$candidate")
      rate=$(env "${base_env[@]}" "${args[@]}" "$@" 2>/dev/null | rate_in_output) || true
      if [[ -n $rate ]] && python3 -c "import sys; sys.exit(0 if $rate > ${rate_of[$candidate]:-0} else 1)"; then
        rate_of[$candidate]=$rate
      fi
    done
  done
  probe_winner=""
  for candidate in "${candidates[@]}"; do
    echo "  $label $candidate: ${rate_of[$candidate]:-failed} (best of 2)"
    if [[ -n ${rate_of[$candidate]:-} ]] && python3 -c "import sys; sys.exit(0 if ${rate_of[$candidate]} > $best_rate else 1)"; then
      probe_winner=$candidate best_rate=${rate_of[$candidate]}
    fi
  done
  [[ -n $probe_winner ]] || { echo "  every $label probe failed: $*" >&2; probe_winner=${candidates[0]}; }
}

rate_in_output() {  # stdin: a probe's output
  local text
  text=$(cat)
  local rate
  rate=$(grep -o '[0-9.]\+ [A-Za-z]\+/s' <<<"$text" | head -1 | cut -d' ' -f1) || true
  [[ -n $rate ]] || rate=$(grep -o '"[a-z_]*per_second": [0-9.]\+' <<<"$text" | tail -1 | cut -d' ' -f2) || true
  echo "$rate"
}

coretype_env() {  # NAME ("unset" = OpenBLAS's own detection)
  [[ $1 == unset ]] || echo "OPENBLAS_CORETYPE=$1"
}

# pick_allocator COMMAND...: any peer's fastest allocator. Sets best_allocator
# and allocator_args (its `env` arguments).
pick_allocator() {
  local none=()
  pick_allocator_under none "$@"
}

pick_allocator_under() {  # BASE_ENV_ARRAY_NAME COMMAND...
  local base=$1
  shift
  if [[ -n ${ALLOCATOR-} ]]; then
    best_allocator=$ALLOCATOR
  else
    echo "Allocator probe: $*"
    # shellcheck disable=SC2046
    probe_best allocator "$base" allocator_env $(installed_allocators) -- "$@"
    best_allocator=$probe_winner
  fi
  mapfile -t allocator_args < <(allocator_env "$best_allocator")
}

# pick_mpi_allocator BINARY MB MPIRUN...: MPI_Allreduce's fastest allocator at
# MB megabytes, BINARY built from bench/mpi/allreduce_mpi.c, run as MPIRUN...
# BINARY. The allocator reaches the ranks through mpirun's environment (every
# rank on this host).
pick_mpi_allocator() {
  local binary=$1 mb=$2
  shift 2
  local probe
  probe=$(mktemp)
  printf '%q ' "$@" "$binary" "$mb" 3 >"$probe"
  echo "| awk -F'|' '\$2 + 0 == $mb { print \$4 + 0 \" GB/s\" }'" >>"$probe"
  pick_allocator bash "$probe"
  rm -f "$probe"
  echo "MPI_Allreduce at its best here: allocator $best_allocator"
}

# pick_peer_best COMMAND...: PyTorch's allocator and OpenBLAS kernel. Sets
# best_allocator, best_coretype ("" = OpenBLAS's own detection), torch_env (the
# `env` arguments that run PyTorch at its best: OpenBLAS single-threaded under
# torch's own pool) and peer_choice (one line saying what was chosen).
pick_peer_best() {
  local blas_env=(-u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1)
  pick_allocator_under blas_env "$@"
  if [[ -n ${CORETYPE-} ]]; then
    best_coretype=${CORETYPE/#unset/}
  else
    local candidates=(unset)
    grep -qw avx2 /proc/cpuinfo && candidates+=(Haswell)
    grep -qw avx512f /proc/cpuinfo && candidates+=(SkylakeX)
    grep -qw avx512_bf16 /proc/cpuinfo && candidates+=(Cooperlake)
    grep -q AuthenticAMD /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo && candidates+=(Zen)
    local with_allocator=("${blas_env[@]}" "${allocator_args[@]}")
    echo "OpenBLAS kernel probe (allocator $best_allocator):"
    probe_best OPENBLAS_CORETYPE with_allocator coretype_env "${candidates[@]}" -- "$@"
    best_coretype=${probe_winner/#unset/}
  fi
  set_torch_env
}

# pick_peer_allocator COMMAND...: after pick_peer_best, the allocator again for
# one workload (under the kernel chosen): a small net's probe need not pick
# what a large net's activations want. Updates torch_env and peer_choice.
pick_peer_allocator() {
  local blas_env=(-u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 ${best_coretype:+OPENBLAS_CORETYPE=$best_coretype})
  pick_allocator_under blas_env "$@"
  set_torch_env
}

set_torch_env() {
  torch_env=(-u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 "${allocator_args[@]}"
             ${best_coretype:+OPENBLAS_CORETYPE=$best_coretype})
  peer_choice="allocator $best_allocator, OPENBLAS_CORETYPE=${best_coretype:-unset}, OPENBLAS_NUM_THREADS=1"
  echo "PyTorch at its best here: $peer_choice"
}
