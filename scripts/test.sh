#!/usr/bin/env bash
# Runs the static checks and the whole test suite, then prints one summary
# line "N passed, N failed, N skipped" (static checks count as tests).
set -uo pipefail
export NO_COLOR=1
cd "$(dirname "$0")/.."
start=$(date +%s)
passed=0 failed=0 skipped=0
out=$(mktemp); trap 'rm -f "$out"' EXIT

check() {
  local name=$1; shift
  if "$@" >"$out" 2>&1; then
    echo "[test] $name: ok"; passed=$((passed + 1))
  else
    echo "[test] $name: FAILED"; tail -n 30 "$out"; failed=$((failed + 1))
  fi
}
check "deno fmt --check" deno fmt --check
check "deno lint" deno lint
check "deno check" deno task -q check

# Namespaces, cgroups and pins of earlier runs that were killed before they could clean up.
deno run --allow-all lib/demo/leftovers.ts || echo "[test] could not sweep what killed runs left"
deno test --allow-all --no-prompt "$@" 2>&1 | tee "$out"
status=${PIPESTATUS[0]}
summary=$(grep -E '^(ok|FAILED) \|' "$out" | tail -n 1)
# As root (CI) every test has what it needs after scripts/setup.sh --tests: a skip is a missing
# tool or a broken harness (tests/helpers/skip.ts), so it fails the command; only a property of
# the kernel, named "(skipped: the kernel …)", may stand.
rootSkips=""
if [ "$(id -u)" -eq 0 ]; then
  rootSkips=$(grep -E ' \.\.\. ignored \(' "$out" | grep -vF '(skipped: the kernel ' || true)
fi
n() { echo "$summary" | grep -oE "[0-9]+ $1" | grep -oE '^[0-9]+' || echo 0; }
passed=$((passed + $(n passed)))
failed=$((failed + $(n failed)))
skipped=$((skipped + $(n ignored)))
if [ -n "$rootSkips" ]; then
  echo "[test] skipped as root, each a failure (install what they need: scripts/setup.sh --tests):"
  echo "$rootSkips"
  failed=$((failed + $(echo "$rootSkips" | wc -l)))
fi
if [ -z "$summary" ] || { [ "$status" -ne 0 ] && [ "$(n failed)" -eq 0 ]; }; then
  echo "[test] deno test exited $status without a summary"; failed=$((failed + 1))
fi
echo "[test] suite took $(( $(date +%s) - start ))s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
