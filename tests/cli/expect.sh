# Sourced by the CLI checks: runs a command and counts whether its exit code
# and output are what a case expects.
passed=0
failed=0

# expect NAME EXIT_CODE PATTERN -- COMMAND...
expect() {
  local name=$1 code=$2 pattern=$3
  shift 4
  local out
  out=$("$@" 2>&1)
  local rc=$?
  if [[ $rc -eq $code ]] && grep -qE -- "$pattern" <<<"$out"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: $name (exit $rc, wanted $code; pattern '$pattern')"
    echo "$out" | tail -n 5 | sed 's/^/    /'
  fi
}
