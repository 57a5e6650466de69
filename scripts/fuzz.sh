#!/usr/bin/env bash
# Builds the libFuzzer harnesses of test/fuzz (clang, ASan + UBSan), replays every input in
# test/fuzz/regressions/, then fuzzes each harness for a bounded time starting from the seed
# corpus kept in the repository. Prints executions per second and coverage per harness.
#   RVMA_FUZZ_SECONDS  seconds per harness (default 60)
#   RVMA_FUZZ_RUNS     inputs per harness instead of a time budget (e.g. 100000)
#   RVMA_FUZZ_ONLY     run only this harness (e.g. fuzz_tcp_stream)
# What a run finds goes to build-fuzz/artifacts/<harness>/: add the input to
# test/fuzz/regressions/<harness>/ once fixed, so it is replayed on every run.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${RVMA_FUZZ_SECONDS:-60}"
if ! command -v clang++ >/dev/null; then
  echo "npm run fuzz needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev" >&2
  exit 1
fi
mkdir -p build-fuzz
if ! { cmake -S . -B build-fuzz -DRVMA_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build build-fuzz -j"$(nproc)"; } >build-fuzz/build.log 2>&1; then
  tail -40 build-fuzz/build.log
  exit 1
fi

harnesses=(fuzz_frames fuzz_verbs_messages fuzz_tcp_stream fuzz_shm fuzz_ring)
[ -n "${RVMA_FUZZ_ONLY:-}" ] && harnesses=("$RVMA_FUZZ_ONLY")
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
failed=()
for h in "${harnesses[@]}"; do
  bin="build-fuzz/test/fuzz/$h"
  work="build-fuzz/corpus/$h"
  artifacts="build-fuzz/artifacts/$h/"
  log="build-fuzz/$h.log"
  mkdir -p "$work" "$artifacts"
  regressions=(test/fuzz/regressions/"$h"/*)
  if [ -e "${regressions[0]}" ] && ! "$bin" "${regressions[@]}" >"$log" 2>&1; then
    echo "$h: a regression input fails again (see $log)"
    tail -30 "$log"
    failed+=("$h")
    continue
  fi
  budget=(-max_total_time="$seconds")
  [ -n "${RVMA_FUZZ_RUNS:-}" ] && budget=(-runs="$RVMA_FUZZ_RUNS")
  # Every input of these harnesses runs in milliseconds (22 ms at most, measured): an input
  # over 2 s is reported (and kept in $artifacts as slow-unit-*) without failing the run, and
  # only one still running after 30 s fails it: a hang, not a busy machine's stall.
  if "$bin" "${budget[@]}" -timeout=30 -report_slow_units=2 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$artifacts" "$work" "test/fuzz/corpus/$h" >"$log" 2>&1; then
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    execs=$(sed -n 's/^stat::number_of_executed_units: //p' "$log")
    rate=$(sed -n 's/.*exec\/s: \([0-9]*\).*/\1/p' <<<"$done_line")
    cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$done_line")
    ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$done_line")
    corpus=$(sed -n 's/.* corp: \([^ ]*\).*/\1/p' <<<"$done_line")
    printf '%-20s %7s  %9s runs  %7s exec/s  cov %5s  features %6s  corpus %s\n' \
      "$h" "${RVMA_FUZZ_RUNS:+all}${RVMA_FUZZ_RUNS:-${seconds}s}" "$execs" "$rate" "$cov" "$ft" "$corpus"
    grep -E '^Slowest unit' "$log" | sed "s/^/$h: warning: /" || true
  else
    echo "$h: the fuzzer found a failure (log $log, input in $artifacts)"
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -10
    # The stack of the failing input (a timeout prints where the harness waited), and the
    # input itself, so a run elsewhere can be replayed here.
    sed -n '/ERROR: libFuzzer\|ERROR: AddressSanitizer\|runtime error/,$p' "$log" | grep -E '^ +#[0-9]+ ' | head -40
    for unit in "$artifacts"*; do
      [ -f "$unit" ] && echo "input $(basename "$unit") (base64): $(head -c 65536 "$unit" | base64 -w0)"
    done
    failed+=("$h")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz: failures in ${failed[*]}"
  exit 1
fi
echo "fuzz: ${#harnesses[@]} harnesses, no failure"
