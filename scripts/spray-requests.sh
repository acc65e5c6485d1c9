#!/usr/bin/env bash
# The agent requests on the Stardust spraying table (SwitchIngress.spray)
# in a stardust-failover bench bundle's transcripts, poll by poll: the
# recipe's control plane waits on fa1's clock (time.wait) once per poll, so
# the requests to every switch between two of fa1's time.wait requests are
# one poll's (bring-up, before the first poll, is left out of the counts).
#
#   scripts/spray-requests.sh runs/<bundle>
#
# Prints the first poll that touched the spraying (the first heal: the
# phases start with fa1-fe1 going dark) per switch and op, the totals over
# every poll, and the bytes the spraying's requests and their answers take
# in the transcripts (bring-up included).
set -euo pipefail
b=${1:?usage: scripts/spray-requests.sh <bundle directory>}
for f in "$b"/transcripts/*.log; do
	d=$(basename "$f" .log)
	awk -v d="$d" '($2 == ">" || $2 == "<") && $3 ~ /^\{"id":/ { print $1, d, $2, length($0) + 1, $3 }' "$f"
done | sort -s -k1,1 | awk '
{ match($5, /^\{"id":[0-9]+/); id = $2 " " substr($5, 7, RLENGTH - 6) }
$3 == "<" { if (id in pending) { bytes += $4; delete pending[id] }; next }
$5 ~ /"name":"SwitchIngress\.spray"/ { pending[id] = 1; bytes += $4 }
$2 == "fa1" && $5 ~ /"op":"time\.wait"/ { poll++; next }
poll > 0 && $5 ~ /"name":"SwitchIngress\.spray"/ {
	match($5, /"op":"[a-z._]+"/); op = substr($5, RSTART + 6, RLENGTH - 7)
	if (first == 0) first = poll
	if (poll == first) { one[$2 " " op]++; onet++ }
	all[op]++; allt++
}
END {
	if (first == 0) { print "no poll touched the spraying table"; exit 1 }
	printf "first heal (poll %d): %d requests\n", first, onet
	for (k in one) printf "  %s %d\n", k, one[k] | "sort"
	close("sort")
	printf "every poll: %d requests\n", allt
	for (k in all) printf "  %s %d\n", k, all[k] | "sort"
	close("sort")
	printf "spraying requests and answers in the transcripts: %.1f MB\n", bytes / 1e6
}'
