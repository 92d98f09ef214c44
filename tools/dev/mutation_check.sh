#!/usr/bin/env bash
# Mutation check (issue #14): each one-line change to the realistic model
# below must fail at least one unit test, not only the golden files or the
# accuracy targets. Builds a scratch copy of HEAD per mutation and runs the
# unit tests without the goldens, the CLI tables and the validation table.
#
# Usage: tools/dev/mutation_check.sh [BUILD_JOBS]
# Exit status 0 when every mutation is caught.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
jobs="${1:-2}"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
# name | file | sed expression (one line changes)
mutations=(
  "Hopper GEMM efficiency 0.803 -> 0.85|data/chips/h100.toml|s/gemm_max = { value = 0.803/gemm_max = { value = 0.85/"
  "TP collective calls halved|src/estimate/core.cc|s/static_cast<int>(s.lps) \* 2 \* passes \* s.m/static_cast<int>(s.lps) * passes * s.m/"
  "FSDP all-gather calls halved|src/estimate/core.cc|s/static_cast<int>(2 \* s.m \* s.lps)/static_cast<int>(s.m * s.lps)/"
  "optimizer bytes per parameter 12 -> 8|include/scalemodel/estimate/core.h|s/double weights = 2, grads = 4, optimizer = 12;/double weights = 2, grads = 4, optimizer = 8;/"
)
excluded='cli_golden|cli_errors|cli_help_examples|TrainingAccuracyTargets|AccuracyDocIsCurrent'
missed=0
for m in "${mutations[@]}"; do
  IFS='|' read -r name file expr <<<"$m"
  rm -rf "$scratch/src"
  git -C "$root" archive HEAD --prefix=src/ | tar -x -C "$scratch"
  before="$(md5sum "$scratch/src/$file")"
  sed -i "$expr" "$scratch/src/$file"
  if [[ "$(md5sum "$scratch/src/$file")" == "$before" ]]; then
    echo "MUTATION NOT APPLIED: $name ($file): the code changed, update this script"
    missed=1
    continue
  fi
  cmake -S "$scratch/src" -B "$scratch/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
  cmake --build "$scratch/build" -j"$jobs" >/dev/null
  if ctest --test-dir "$scratch/build" -j"$jobs" -E "$excluded" \
      >"$scratch/log" 2>&1; then
    echo "NOT CAUGHT: $name"
    missed=1
  else
    failed="$(grep -c '(Failed)' "$scratch/log" || true)"
    echo "caught: $name ($failed unit tests fail)"
  fi
done
exit "$missed"
