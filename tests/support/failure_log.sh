#!/usr/bin/env bash
# failure_log.sh FILE: what a shell test prints of a failed step's log. A sanitizer report is
# printed whole (its first lines name the defect; a report cut to the log's last lines, as a CI
# leak once was, shows only indirect leaks); anything else, the last 15 lines.
log=${1:?usage: failure_log.sh FILE}
report='^==[0-9]+==ERROR: |^WARNING: ThreadSanitizer|runtime error: '  # where ASan, TSan, UBSan begin
if grep -qE "$report" "$log"; then
  sed -nE "/$report/,\$p" "$log" | head -n 400
else
  tail -n 15 "$log"
fi | sed 's/^/    /'
