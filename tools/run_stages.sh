#!/usr/bin/env bash
# Runs Makefile targets one after another as the stages of `make test`, printing a line per stage with its
# wall time as it ends and a table of all of them at the end (docs/testing.md keeps the budget per stage).
# Stops at the first stage that fails; the table then shows where. The times are also written to
# build/stage_times.tsv.
#
#   tools/run_stages.sh TARGET...
set -uo pipefail
cd "$(dirname "$0")/.."

make_cmd=${MAKE:-make}
names=()
times=()
results=()
start_all=$(date +%s)
status=0
for target in "$@"; do
  echo "==> stage $target: started $(date +%H:%M:%S)"
  start=$(date +%s)
  "$make_cmd" --no-print-directory "$target"
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  names+=("$target"); times+=("$elapsed")
  if [ $rc -eq 0 ]; then results+=(ok); else results+=("FAILED ($rc)"); fi
  echo "==> stage $target: ${results[-1]} in ${elapsed} s"
  if [ $rc -ne 0 ]; then status=$rc; break; fi
done
total=$(( $(date +%s) - start_all ))

echo
echo "stage times (wall, s):"
mkdir -p build
: > build/stage_times.tsv
for i in "${!names[@]}"; do
  printf '  %-18s %6d  %s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}"
  printf '%s\t%s\t%s\n' "${names[$i]}" "${times[$i]}" "${results[$i]}" >> build/stage_times.tsv
done
printf '  %-18s %6d\n' total "$total"
printf 'total\t%s\n' "$total" >> build/stage_times.tsv
exit $status
