#!/usr/bin/env bash
# The agent requests on the Stardust spraying table (SwitchIngress.spray)
# in a stardust-failover bench bundle's transcripts, poll by poll: the
# recipe's control plane waits on fa1's clock (time.wait) once per poll, so
# the requests to every switch between two of fa1's time.wait requests are
# one poll's. Bring-up (before the first poll) is left out.
#
#   scripts/spray-requests.sh runs/<bundle>
#
# Prints the first poll that touched the spraying (the first heal: the
# phases start with fa1-fe1 going dark) per switch and op, then the totals
# over every poll.
set -euo pipefail
b=${1:?usage: scripts/spray-requests.sh <bundle directory>}
for f in "$b"/transcripts/*.log; do
	d=$(basename "$f" .log)
	awk -v d="$d" '$2 == ">" && $3 ~ /^\{"id":/ { print $1, d, $3 }' "$f"
done | sort -s -k1,1 | awk '
$2 == "fa1" && $3 ~ /"op":"time\.wait"/ { poll++; next }
poll > 0 && $3 ~ /"name":"SwitchIngress\.spray"/ {
	match($3, /"op":"[a-z._]+"/); op = substr($3, RSTART + 6, RLENGTH - 7)
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
}'
