#!/usr/bin/env bash
# Load is a condition, not a flake: runs the nightly suite (suites/
# nightly.yaml, on the simulated lab) RUNS times while stress-ng keeps
# LOAD_FACTOR times the machine's cores busy, and says how many runs were
# green. `make load`; not part of make test. Without stress-ng (Debian's
# stress-ng package) it says so and skips.
#
#   scripts/load.sh                          # RUNS=3, LOAD_FACTOR=4
#   RUNS=1 LOAD_FACTOR=2 scripts/load.sh
#   TESTBED=/path/to/testbed scripts/load.sh # another build
#
# Each run's output, bundles and JUnit XML live in a temporary directory,
# removed at the end (KEEP=1 keeps it). Exit 0 when every run is green.
set -euo pipefail

RUNS=${RUNS:-3}
LOAD_FACTOR=${LOAD_FACTOR:-4}
cd "$(dirname "$0")/.."
if ! command -v stress-ng >/dev/null 2>&1; then
	echo "load: skipped: stress-ng is not installed (apt-get install stress-ng)"
	exit 0
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/testbed-load-XXXXXX")
stresspid=""
cleanup() {
	if [ -n "$stresspid" ]; then
		kill -TERM "$stresspid" 2>/dev/null || true
		wait "$stresspid" 2>/dev/null || true
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

BIN=${TESTBED:-}
if [ -z "$BIN" ]; then
	go build -o "$work/testbed" ./cmd/testbed
	BIN=$work/testbed
fi
cpus=$(( LOAD_FACTOR * $(nproc) ))
# stress-ng ends with this script (cleanup), or by itself after a day.
stress-ng --cpu "$cpus" --timeout 86400s --quiet &
stresspid=$!
echo "load: stress-ng --cpu $cpus (pid $stresspid) on $(nproc) cores; the nightly suite $RUNS times"
green=0
for i in $(seq 1 "$RUNS"); do
	d=$work/run$i
	mkdir -p "$d"
	t0=$(date +%s)
	set +e
	"$BIN" exp run --suite suites/nightly.yaml --runs-dir "$d/runs" --state-dir "$d/state" \
		--junit "$d/junit.xml" >"$d/out.log" 2>&1
	rc=$?
	set -e
	t1=$(date +%s)
	load=$(cut -d' ' -f1 /proc/loadavg)
	if [ "$rc" = 0 ]; then
		green=$((green + 1))
		echo "load: run $i green in $((t1 - t0)) s (load average $load)"
	else
		echo "load: run $i exit $rc in $((t1 - t0)) s (load average $load):"
		tail -n 20 "$d/out.log" | sed 's/^/    /'
	fi
done
echo "load: $green of $RUNS nightly suites green under stress-ng --cpu $cpus"
[ "$green" = "$RUNS" ]
