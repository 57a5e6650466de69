#!/usr/bin/env bash
# Runs the jest suite against an AddressSanitizer + UndefinedBehaviorSanitizer build of the
# addon. Node itself is not instrumented, so the ASan runtime is preloaded; leak checking is
# off because Node keeps allocations alive until exit by design.
set -euo pipefail
cd "$(dirname "$0")/.."
npx cmake-js compile --out build-asan --debug --CDRVMA_SANITIZE=ON >/dev/null
export RVMA_ADDON="$PWD/build-asan/Debug/rvma.node"
export LD_PRELOAD="$(g++ -print-file-name=libasan.so):$(g++ -print-file-name=libubsan.so)"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
export RVMA_SANITIZED=1
npx jest "$@"
