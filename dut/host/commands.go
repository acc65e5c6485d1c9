package host

import (
	"fmt"
	"strings"
)

// The commands the driver sends, all in this file so that an emulated host
// can answer them (COMMANDS.md describes each one). Every command is a
// POSIX shell script of the form
//
//	# testbed:<op>
//	NAME='value'          (zero or more, in the order listed below)
//	<the fixed body of op>
//
// The first line names the operation, the assignment lines carry its
// arguments (in single quotes, a quote inside as close-escape-reopen, the
// usual sh way), and the body never changes for a given op. An emulator
// dispatches on the op and reads the assignments; it need not interpret
// the body.
const (
	opIdentity    = "identity"
	opRun         = "run"
	opUpload      = "upload"
	opAgentProbe  = "agent-probe"
	opAgentStart  = "agent-start"
	opAgentStatus = "agent-status"
	opAgentStop   = "agent-stop"
	opSysctlGet   = "sysctl-get"
	opSysctlSet   = "sysctl-set"
	opRouteGet    = "route-get"
	opRouteSet    = "route-set"
)

// commandVars lists each op's arguments, in the order they are sent.
var commandVars = map[string][]string{
	opIdentity:    nil,
	opRun:         {"W", "Q"},
	opUpload:      {"P", "T", "M", "S"},
	opAgentProbe:  {"B"},
	opAgentStart:  {"B", "D"},
	opAgentStatus: {"B", "D"},
	opAgentStop:   {"B", "D"},
	opSysctlGet:   {"C", "K"},
	opSysctlSet:   {"C", "K", "V"},
	opRouteGet:    {"C", "R"},
	opRouteSet:    {"C", "R", "N"},
}

// inHome makes relative paths relative to $HOME, whatever directory the
// SSH server started the command in.
const inHome = `cd "$HOME" || exit 1
`

// alive is the shell test "process $1 runs and its command line names $B"
// (which guards against a stale pid file naming a reused pid).
const alive = `alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null && tr '\0' ' ' < "/proc/$1/cmdline" 2>/dev/null | grep -qF -- "$B"; }
`

var commandBodies = map[string]string{
	// The caller's command line Q, in the login shell, killed with its
	// whole process group after W seconds: the session's end does not
	// stop a command, and OpenSSH does not always deliver signals.
	opRun: `if command -v timeout >/dev/null 2>&1; then exec timeout -s KILL "$W" "${SHELL:-/bin/sh}" -c "$Q"; fi
exec "${SHELL:-/bin/sh}" -c "$Q"`,

	// Who the host is; key=value lines.
	opIdentity: `echo "hostname=$(uname -n)"
echo "kernel=$(uname -sr)"
echo "arch=$(uname -m)"
echo "os=$(. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")"
echo "vendor=$(cat /sys/class/dmi/id/sys_vendor 2>/dev/null)"
echo "product=$(cat /sys/class/dmi/id/product_name 2>/dev/null)"
echo "serial=$(cat /sys/class/dmi/id/product_serial 2>/dev/null || cat /etc/machine-id 2>/dev/null)"
echo "home=$HOME"`,

	// stdin to a temporary file beside $P, mode $M, checked against the
	// sha256 $S, then renamed over $P (no fsync).
	opUpload: inHome + `trap 'rm -f "$T"' EXIT
mkdir -p "$(dirname "$P")" || exit 1
cat > "$T" || exit 1
chmod "$M" "$T" || exit 1
got=$(sha256sum < "$T") || exit 1
got=${got%% *}
if [ "$got" != "$S" ]; then echo "checksum mismatch: received $got" >&2; exit 3; fi
mv -f "$T" "$P" || exit 1
echo "sha256=$got"`,

	// The host's machine type and, when $B is installed, its checksum and
	// what it says its version is.
	opAgentProbe: inHome + `echo "arch=$(uname -m)"
if [ -f "$B" ]; then
  s=$(sha256sum < "$B") && echo "sha256=${s%% *}"
  echo "version=$("$B" --version 2>/dev/null | head -n 1)"
fi`,

	// The run's token (stdin) to $D/token, mode 0600; then start
	// "$B serve --listen 127.0.0.1:0 --token-file $D/token" in a session
	// of its own, its pid in $D/pid, stdout in $D/out, stderr in $D/log;
	// or report the one already running (which reads the new token on its
	// next request).
	opAgentStart: inHome + alive + `mkdir -p "$D" || exit 1
rm -f "$D/token.new"
(umask 077 && cat > "$D/token.new" && chmod 600 "$D/token.new") || exit 1
mv -f "$D/token.new" "$D/token" || exit 1
p=$(cat "$D/pid" 2>/dev/null)
if alive "$p"; then echo "running=$p"; exit 0; fi
rm -f "$D/pid" "$D/out"
setsid sh -c 'echo $$ > "$1"; exec "$2" serve --listen 127.0.0.1:0 --token-file "$3"' hostagent "$D/pid" "$B" "$D/token" > "$D/out" 2> "$D/log" < /dev/null &
echo "started=$!"`,

	// Whether the agent runs, the address it printed, its last log lines.
	opAgentStatus: inHome + alive + `p=$(cat "$D/pid" 2>/dev/null)
echo "pid=$p"
# A process in the middle of its exec (the start script's sh becoming the
# agent) can show an empty /proc/PID/cmdline for an instant: look twice.
if alive "$p" || { sleep 0.2; alive "$p"; }; then echo "alive=yes"; else echo "alive=no"; fi
echo "listen=$(sed -n 's/^listening //p' "$D/out" 2>/dev/null | head -n 1)"
tail -n 20 "$D/log" 2>/dev/null | sed 's/^/log: /'`,

	// Stop the agent (TERM, then KILL after 5 s) and forget its pid and
	// token.
	opAgentStop: inHome + alive + `p=$(cat "$D/pid" 2>/dev/null)
if alive "$p"; then
  kill -TERM "$p"
  i=0
  while alive "$p" && [ $i -lt 50 ]; do sleep 0.1; i=$((i+1)); done
  if alive "$p"; then kill -KILL "$p"; fi
fi
rm -f "$D/pid" "$D/token"
echo "stopped=$p"`,

	// A sysctl's value.
	opSysctlGet: `"$C" -n "$K"`,

	// Set a sysctl, then read it back.
	opSysctlSet: `"$C" -w "$K=$V" > /dev/null || exit 1
"$C" -n "$K"`,

	// The routes matching selector $R (words, split by the shell).
	opRouteGet: `"$C" route show $R`,

	// Replace the route $N (the words of a whole route), then show the
	// routes matching $R.
	opRouteSet: `"$C" route change $N || exit 1
"$C" route show $R`,
}

// script builds the command for op with its arguments, in commandVars order.
func script(op string, args ...string) string {
	names, ok := commandVars[op]
	body, okb := commandBodies[op]
	if !ok || !okb || len(args) != len(names) {
		panic(fmt.Sprintf("host: script %q with %d arguments", op, len(args)))
	}
	var b strings.Builder
	b.WriteString("# testbed:" + op + "\n")
	for i, n := range names {
		b.WriteString(n + "=" + shellQuote(args[i]) + "\n")
	}
	b.WriteString(body)
	return b.String()
}

func shellQuote(v string) string { return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'" }

// keyValues reads key=value lines.
func keyValues(out string) map[string]string {
	kv := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(l, "log: ") {
			if _, seen := kv[k]; !seen {
				kv[k] = strings.TrimSpace(v)
			}
		}
	}
	return kv
}
