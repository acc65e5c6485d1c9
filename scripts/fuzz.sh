#!/usr/bin/env bash
# Runs every fuzz target of the module, one after the other, each for
# ${FUZZTIME:-30s}: `make fuzz`. Targets are found, not listed: any
# `func FuzzXxx(f *testing.F)` in a _test.go file is picked up.
#
#   FUZZTIME=2m scripts/fuzz.sh                 # longer per target
#   FUZZ_PARALLEL=1 scripts/fuzz.sh              # one fuzzing worker (default: one per CPU)
#   FUZZMINIMIZETIME=60s scripts/fuzz.sh         # minimize new inputs longer (default 50x)
#   FUZZCACHEDIR=$(mktemp -d) scripts/fuzz.sh    # start from the seed corpora only
#   scripts/fuzz.sh ./results ./internal/redact  # only these packages
#
# Each package's test binary is built once, instrumented for fuzzing
# (go test -c -fuzz), and run once per target from the package's
# directory, as go test -fuzz runs it: a package's targets share one
# compile and link, which was most of a short run's time.
#
# A failing input is written to <package>/testdata/fuzz/<target>/;
# commit it with the fix, and `go test` replays it from then on.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

fuzztime=${FUZZTIME:-30s}
# go test minimizes every input that finds new coverage, for up to 60 s by
# default; on inputs of kilobytes (a tar archive) that is most of a short
# run, during which nothing is fuzzed. 50 executions per input keep the
# run fuzzing (a failing input is saved whole all the same).
minimize=${FUZZMINIMIZETIME:-50x}
parallel=()
if [ -n "${FUZZ_PARALLEL:-}" ]; then
  parallel=(-test.parallel "$FUZZ_PARALLEL")
fi

dirs=("$@")
if [ ${#dirs[@]} -eq 0 ]; then
  dirs=(.)
fi

# "<package dir> <target>" per line, sorted, from every tracked or new
# _test.go file under the given directories (vendor and testdata excluded).
targets=$(
  grep -r -H -o -E '^func Fuzz[A-Za-z0-9_]*\(' --include='*_test.go' \
    --exclude-dir=vendor --exclude-dir=testdata --exclude-dir=.git "${dirs[@]}" |
    sed -E 's#^(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\($#\1 \2#' |
    sed -E 's#^\./##' |
    sort -u
)
if [ -z "$targets" ]; then
  echo "fuzz: no fuzz targets under ${dirs[*]}" >&2
  exit 1
fi

bindir=$(mktemp -d)
trap 'rm -rf "$bindir"' EXIT
# Where go test -fuzz keeps the inputs that found new coverage (it passes
# the same directory to the test binary). Every run starts by running
# them all (with the seeds) for its baseline coverage, so the cache grows
# the time before fuzzing starts: a short run (CI's) takes an empty
# directory of its own, and fuzzes from the seed corpora for its whole
# FUZZTIME.
cachedir=${FUZZCACHEDIR:-$(go env GOCACHE)/fuzz}
modpath=$(go list -m)

n=$(printf '%s\n' "$targets" | wc -l)
echo "fuzz: $n targets, $fuzztime each"
failed=()
built=
while read -r dir target; do
  pkg=./$dir
  [ "$dir" = . ] && pkg=.
  importpath=$modpath
  [ "$dir" != . ] && importpath=$modpath/$dir
  bin=$bindir/$(printf '%s' "$dir" | tr '/.' '__').test
  if [ "$built" != "$dir" ]; then
    echo "=== build $pkg"
    if ! go test -c -fuzz . -o "$bin" "$pkg"; then
      failed+=("$pkg (build)")
      continue
    fi
    built=$dir
  fi
  if [ ! -x "$bin" ]; then
    failed+=("$pkg $target (no test binary)")
    continue
  fi
  echo "=== $pkg $target"
  out=$(mktemp)
  if ! (cd "$root/$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "$fuzztime" \
    -test.fuzzminimizetime "$minimize" -test.fuzzcachedir "$cachedir/$importpath" "${parallel[@]}") 2>&1 | tee "$out"; then
    # Go before 1.27 can fail a target at the -fuzztime boundary with a
    # bare "context deadline exceeded" and no failing input: a race in the
    # fuzzing coordinator (go.dev/issue/75804), not a finding. A finding
    # always writes its input; without one, the corpus is replayed, and
    # only a failure there fails the target.
    if ! grep -q 'Failing input written to' "$out" && grep -q '^    context deadline exceeded$' "$out" &&
      (cd "$root/$dir" && "$bin" -test.run "^${target}\$"); then
      echo "fuzz: $pkg $target: the fuzzing coordinator's deadline race (go.dev/issue/75804), no failing input; its corpus replays clean"
    else
      failed+=("$pkg $target")
    fi
  fi
  rm -f "$out"
done <<<"$targets"

if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: ${#failed[@]} of $n targets failed:" >&2
  printf '  %s\n' "${failed[@]}" >&2
  exit 1
fi
echo "fuzz: all $n targets passed"
