#!/usr/bin/env bash
# Soak the lab's promises: N random SIGINTs and SIGKILLs across the recipes
# that plan on one simulated lab (`testbed lab up`), then ask the devices
# (the instruments on their own wire protocols, the switches and hosts
# through their agents: scripts/soakcheck) whether every one is back at its
# safe state or at the state found before the soak, verify every bundle,
# and check that the next run finds the lab clean.
#
#   scripts/soak.sh                 # N=12, SEED=1
#   N=40 SEED=7 scripts/soak.sh
#   TESTBED=/path/to/testbed scripts/soak.sh   # soak another build
#
# Prints: tried (runs, SIGINT, SIGKILL, exit codes), restored (devices back
# at their safe or found state, of those checked), bundles verified (a
# SIGKILLed run's bundle is partial by design: it is counted apart and must
# open as incomplete) and the next run. Exit 0 when every device is
# restored, every finalized bundle verifies and the next run is clean. Everything it makes lives in a temporary
# directory, removed at the end (KEEP=1 keeps it).
set -euo pipefail

N=${N:-12}
SEED=${SEED:-1}
MAX_DELAY_MS=${MAX_DELAY_MS:-8000}
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/testbed-soak-XXXXXX")
labpid=""
cleanup() {
	if [ -n "$labpid" ]; then
		kill -INT "$labpid" 2>/dev/null || true
		wait "$labpid" 2>/dev/null || true
	fi
	if [ "${KEEP:-0}" = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

BIN=${TESTBED:-}
if [ -z "$BIN" ]; then
	go build -o "$work/testbed" ./cmd/testbed
	BIN=$work/testbed
fi
go build -o "$work/soakcheck" ./scripts/soakcheck
export TESTBED_STATE_DIR=$work/state
runs=$work/runs

"$BIN" lab up --inventory-out "$work/lab.yaml" --seed "$SEED" >"$work/lab.out" 2>"$work/lab.err" &
labpid=$!
for _ in $(seq 1 600); do
	grep -q "inventory written" "$work/lab.out" 2>/dev/null && break
	kill -0 "$labpid" 2>/dev/null || { cat "$work/lab.err"; echo "soak: lab up died"; exit 2; }
	sleep 0.1
done
inv=$work/lab.yaml

# The switches start with no P4 program; the LinkGuardian recipes start
# theirs and leave it running (by design). So that "the state found" of a
# switch is its program's tables and registers, a warm-up run loads them
# first (and is itself stopped with SIGINT once they run).
switches=$(sed -n 's/^ *\(sw[0-9]*\):$/\1/p' "$inv" | sort -u | paste -sd, -)
if [ -n "$switches" ]; then
	"$BIN" exp run loss-sweep --inventory "$inv" --runs-dir "$work/warmup" --seed 0 >"$work/warmup.out" 2>"$work/warmup.err" &
	wpid=$!
	for _ in $(seq 1 150); do
		"$work/soakcheck" snapshot --inventory "$inv" --devices "$switches" >"$work/sw.json" 2>/dev/null || true
		if ! grep -q '"sw[0-9]* program": "\(error\)\?"' "$work/sw.json"; then break; fi
		kill -0 "$wpid" 2>/dev/null || break
		sleep 2
	done
	kill -INT "$wpid" 2>/dev/null || true
	wait "$wpid" || true
fi
"$work/soakcheck" snapshot --inventory "$inv" >"$work/before.json"

# The recipes this lab can serve: those whose plan binds to it.
mapfile -t listed < <("$BIN" exp list --output json | sed -n 's/.*"name": *"\([^"]*\)".*/\1/p')
[ "${#listed[@]}" -gt 0 ] || { echo "soak: no recipes listed"; exit 2; }
# The recipes take turns on one lab, each with its own P4 program: those
# that would refuse a switch running another's are let replace it (and
# restart the program found at their end), or most runs after the first
# would fail on the refusal instead of exercising the recipe.
recipes=()
declare -A extra=()
for r in "${listed[@]}"; do
	if "$BIN" exp run "$r" --inventory "$inv" --dry-run >/dev/null 2>&1; then recipes+=("$r"); fi
	if "$BIN" exp show "$r" --output json 2>/dev/null | grep -q '"name": *"replace_program"'; then extra[$r]="--set replace_program=true"; fi
done
[ "${#recipes[@]}" -gt 0 ] || { echo "soak: no recipe plans on this lab"; exit 2; }
echo "recipes: ${recipes[*]} (of ${#listed[@]} listed; the others do not plan on this lab)"

RANDOM=$SEED
ints=0 kills=0 ended=0
declare -A codes=()
for i in $(seq 1 "$N"); do
	recipe=${recipes[$((RANDOM % ${#recipes[@]}))]}
	sig=INT
	if [ $((RANDOM % 3)) = 0 ]; then sig=KILL; fi
	delay_ms=$((500 + RANDOM % MAX_DELAY_MS))
	# shellcheck disable=SC2086 # extra is words
	"$BIN" exp run "$recipe" --inventory "$inv" --runs-dir "$runs" --seed "$i" ${extra[$recipe]:-} >"$work/run$i.out" 2>"$work/run$i.err" &
	pid=$!
	sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
	if kill -0 "$pid" 2>/dev/null; then
		kill -"$sig" "$pid" 2>/dev/null || true
		if [ "$sig" = INT ]; then ints=$((ints + 1)); else kills=$((kills + 1)); fi
		# A run stopped by SIGINT restores the lab; give it two minutes.
		for _ in $(seq 1 1200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then
			echo "run $i ($recipe): still running 2 min after SIGINT; killed"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	else
		sig=none
		ended=$((ended + 1))
	fi
	code=0
	wait "$pid" || code=$?
	codes[$code]=$(( ${codes[$code]:-0} + 1 ))
	printf 'run %2d  %-18s %-4s after %5d ms  exit %s\n' "$i" "$recipe" "$sig" "$delay_ms" "$code"
done

# What SIGKILLed runs left and no later run replayed: undo it now, as a
# user would, when this build has the command.
if "$BIN" lab --help 2>/dev/null | grep -q recover; then
	"$BIN" lab recover --inventory "$inv" >"$work/recover.out" 2>&1 || true
	echo "lab recover:"; sed 's/^/  /' "$work/recover.out"
else
	echo "lab recover: not in this build"
fi

check=0
"$work/soakcheck" compare --inventory "$inv" "$work/before.json" >"$work/compare.out" 2>&1 || check=$?
grep "NOT RESTORED" "$work/compare.out" || true
restored=$(sed -n 's/^devices checked: \([0-9]*\), restored: \([0-9]*\).*/\2 of \1/p' "$work/compare.out")

# The next run after the soak finds the lab clean: no journal or lease in
# its way, every device answering.
next=0
"$BIN" exp run attenuation-sweep --inventory "$inv" --runs-dir "$work/next" --set links=l10g --set stop_db=1 --set step_db=1 \
	--set max_seconds=0.2 --set fine_step_db=0 >"$work/next.out" 2>"$work/next.err" || next=$?
if [ "$next" = 0 ]; then nextrun="clean (exit 0)"; else
	nextrun="NOT clean (exit $next)"
	sed 's/^/  /' "$work/next.err" | tail -5
fi

total=0 verified=0 partial=0 bad=0
for b in "$runs"/*/; do
	[ -d "$b" ] || continue
	total=$((total + 1))
	if out=$("$BIN" results verify "$b" 2>&1); then
		verified=$((verified + 1))
	elif grep -q "never finalized" <<<"$out"; then
		partial=$((partial + 1))
	else
		bad=$((bad + 1))
		echo "bundle $b does not verify:"; sed 's/^/  /' <<<"$out"
	fi
done

exits=""
for c in $(printf '%s\n' "${!codes[@]}" | sort -n); do exits+=" $c:${codes[$c]}"; done
echo "tried: $N runs ($ints SIGINT, $kills SIGKILL, $ended ended before their signal); exit codes (code:count):$exits"
echo "restored: $restored devices at their safe or found state"
echo "bundles verified: $verified of $total ($partial partial from SIGKILL, $bad failing)"
echo "next run: $nextrun"
[ "$check" = 0 ] && [ "$bad" = 0 ] && [ "$next" = 0 ]
