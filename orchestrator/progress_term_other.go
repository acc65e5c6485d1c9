//go:build !linux && !darwin && !freebsd && !netbsd && !openbsd && !dragonfly

package orchestrator

// IsTerminal reports whether fd is a terminal; on this platform it is not
// asked, and progress is shown as plain lines.
func IsTerminal(fd uintptr) bool { return false }

// TerminalWidth is the terminal's width in columns (0: unknown).
func TerminalWidth(fd uintptr) int { return 0 }
