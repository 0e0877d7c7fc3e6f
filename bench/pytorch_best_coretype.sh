# Sourced by the PyTorch comparison scripts: finds PyTorch's best OpenBLAS
# kernel on this machine, so that no comparison runs PyTorch on a kernel
# weaker than it could have.
#
#   source bench/pytorch_best_coretype.sh
#   pick_best_coretype PROBE_COMMAND...
#
# Runs PROBE_COMMAND (which must print a rate, higher is better, as its first
# "<number> <unit>/s" on stdout) under OpenBLAS's own detection and under each
# OPENBLAS_CORETYPE the CPU can run, two alternating rounds, best of the two
# per candidate (one short run is at the mercy of a VM's noise). Sets
# best_coretype ("" = OpenBLAS's own detection) and torch_env, the `env`
# arguments that run PyTorch at its best. CORETYPE=NAME (or CORETYPE=unset)
# skips the probe.
#
# Some machines set OPENBLAS_CORETYPE for every process (this project's VM:
# Haswell, on an AVX-512 CPU), and OpenBLAS misdetects others (Emerald Rapids
# falls back to its generic kernel): neither side of a comparison runs under
# the environment's value unless it is the fastest. Forcing a kernel the CPU
# lacks would die with SIGILL, so only those the CPU has are tried.

pick_best_coretype() {
  if [[ -n ${CORETYPE-} ]]; then
    best_coretype=${CORETYPE/#unset/}
  else
    local candidates=("")
    grep -qw avx2 /proc/cpuinfo && candidates+=(Haswell)
    grep -qw avx512f /proc/cpuinfo && candidates+=(SkylakeX)
    grep -qw avx512_bf16 /proc/cpuinfo && candidates+=(Cooperlake)
    grep -q AuthenticAMD /proc/cpuinfo && grep -qw avx2 /proc/cpuinfo && candidates+=(Zen)
    local -A rate_of=()
    local round coretype rate key best_rate=0
    for round in 1 2; do
      for coretype in "${candidates[@]}"; do
        rate=$(env -u OPENBLAS_CORETYPE ${coretype:+OPENBLAS_CORETYPE=$coretype} OPENBLAS_NUM_THREADS=1 "$@" 2>/dev/null |
          grep -o '[0-9.]* [a-z]*/s' | head -1 | cut -d' ' -f1) || true
        key=${coretype:-unset}
        if [[ -n $rate ]] && python3 -c "import sys; sys.exit(0 if $rate > ${rate_of[$key]:-0} else 1)"; then
          rate_of[$key]=$rate
        fi
      done
    done
    best_coretype=""
    for coretype in "${candidates[@]}"; do
      key=${coretype:-unset}
      echo "PyTorch, OPENBLAS_CORETYPE=$key: ${rate_of[$key]:-failed} (best of 2)"
      if [[ -n ${rate_of[$key]:-} ]] && python3 -c "import sys; sys.exit(0 if ${rate_of[$key]} > $best_rate else 1)"; then
        best_coretype=$coretype best_rate=${rate_of[$key]}
      fi
    done
  fi
  torch_env=(-u OPENBLAS_CORETYPE OPENBLAS_NUM_THREADS=1 ${best_coretype:+OPENBLAS_CORETYPE=$best_coretype})
  echo "PyTorch at its best here: OPENBLAS_NUM_THREADS=1 OPENBLAS_CORETYPE=${best_coretype:-unset}"
}
