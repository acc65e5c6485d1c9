#!/bin/sh
# The headless browser that the test binaries of one run share (Go's
# internal/browsertest, when TESTBED_TEST_BROWSER_DIR names DIR):
#
#   sh internal/browsertest/browser.sh stop DIR
#       stops the browser DIR records (its whole process group, SIGTERM,
#       SIGKILL after 10 s) and removes DIR. make test runs it after its
#       tests, whether they passed or not.
#
#   sh -c "$script" browsertest-browser supervise DIR IDLE CHROMIUM ARGS...
#       how browsertest starts the browser, in a session of its own: this
#       shell (the session's and its one process group's leader, the pid
#       DIR records) starts CHROMIUM and watches it. It ends the browser
#       once no test binary has used it for IDLE seconds (a binary holds a
#       shared flock on DIR/users from its first tab until its last test
#       has ended; the kernel lets go of it when the binary dies, even by
#       SIGKILL), removes its profile, and DIR when no other browser is
#       recorded there: a run killed before its stop (make killed by
#       SIGKILL runs nothing more) leaves nothing behind. A binary that
#       finds the recorded browser dead kills what is left of its group
#       (this shell included) and starts another.
#
# DIR/lock (flock) guards DIR/browser, the record of the running browser:
# its DevTools websocket URL, its pid (this shell's: its process group),
# its profile directory, one a line. A binary takes the lock, then its
# DIR/users lock, then reads or writes the record; the watcher takes it
# to retire the record.

set -u

# stop DIR: see above.
stop() {
	[ -d "$1" ] || return 0
	pid=$(sed -n 2p "$1/browser" 2>/dev/null)
	case $pid in
	'' | *[!0-9]* | 0 | 1) ;;
	*)
		# Only the browser DIR records (its profile under DIR), not a
		# process group whose leader took the pid of one that died.
		profile=$(sed -n 3p "$1/browser")
		case $profile in
		"$1"/profile-*) ;;
		*) profile= ;;
		esac
		if [ -z "$profile" ] || ! tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -q -F -x -e "--user-data-dir=$profile"; then
			rm -rf "$1"
			return 0
		fi
		kill -TERM -"$pid" 2>/dev/null
		n=0
		while kill -0 -"$pid" 2>/dev/null && [ $n -lt 50 ]; do
			sleep 0.2
			n=$((n + 1))
		done
		kill -KILL -"$pid" 2>/dev/null
		;;
	esac
	rm -rf "$1"
}

# unused DIR: no test binary holds DIR/users.
unused() {
	flock -n "$1/users" true 2>/dev/null
}

# supervise DIR IDLE PROFILE CHROMIUM ARGS...: see above. It waits for
# DIR/users in flock (no CPU while binaries use the browser), then IDLE
# seconds, and ends the browser if still no binary holds it.
supervise() {
	dir=$1 idle=$2 profile=$3
	shift 3
	"$@" </dev/null &
	browser=$!
	while [ -d "$dir" ] && kill -0 "$browser" 2>/dev/null; do # else it died, or DIR went: end
		flock "$dir/users" true 2>/dev/null || { sleep 1; continue; }
		sleep "$idle"
		retire "$dir" 8>>"$dir/lock" 2>/dev/null && break
	done
	# CHROMIUM may be a wrapper script (Debian's chromium-headless-shell):
	# wait for the browser it started too.
	read -r started 2>/dev/null </proc/"$browser"/task/"$browser"/children || started=
	trap '' TERM
	kill -TERM -$$ 2>/dev/null
	n=0
	for p in $browser $started; do
		while kill -0 "$p" 2>/dev/null && [ $n -lt 50 ]; do
			sleep 0.2
			n=$((n + 1))
		done
	done
	rm -rf "$profile"
	tidy "$dir" 8>>"$dir/lock" 2>/dev/null
	kill -KILL -$$ # what is left of the group, this shell last
}

# retire DIR, fd 8 open on DIR/lock: under the lock, when no binary uses
# the browser (one connecting holds the lock, then users), removes its
# record, so that none connects to it after; fails when one uses it.
retire() {
	flock 8 && unused "$1" || return 1
	forget "$1"
}

# tidy DIR, fd 8 open on DIR/lock: the browser has ended; its record
# goes, and DIR when it records no other browser and no binary uses it.
tidy() {
	flock 8 || return
	forget "$1"
	if [ ! -e "$1/browser" ] && unused "$1"; then rm -rf "$1"; fi
}

# forget DIR: removes the record if it is this shell's browser's.
forget() {
	if [ "$(sed -n 2p "$1/browser" 2>/dev/null)" = "$$" ]; then rm -f "$1/browser"; fi
}

case ${1-} in
stop)
	stop "$2"
	;;
supervise)
	shift
	supervise "$@"
	;;
*)
	echo "usage: $0 stop DIR | supervise DIR IDLE PROFILE CHROMIUM ARGS..." >&2
	exit 2
	;;
esac
