package ocs

import (
	"strconv"
	"strings"
)

// The SCPI header words the Polatis emulator matches. Until the N77xx and
// Polatis emulators share one SCPI server core below them, this is a copy of
// the N77xx emulator's header matching (simlab/voa/scpi_n77xx.go), kept
// apart so that the two device packages do not import each other.

// mnemonic is one SCPI header keyword in its short and long forms.
type mnemonic struct{ short, long string }

// match reports whether word (upper case, suffix stripped) is the short or long form.
func (m mnemonic) match(w string) bool { return w == m.short || w == m.long }

var (
	mSTAT = mnemonic{"STAT", "STATE"}
	mSYST = mnemonic{"SYST", "SYSTEM"}
	mERR  = mnemonic{"ERR", "ERROR"}
	mNEXT = mnemonic{"NEXT", "NEXT"}
)

// word is a parsed header element.
type word struct {
	name   string
	suffix int // 0 if absent
}

func parseHeader(h string) ([]word, bool) {
	h = strings.TrimPrefix(strings.ToUpper(strings.TrimSpace(h)), ":")
	var out []word
	for _, part := range strings.Split(h, ":") {
		i := len(part)
		for i > 0 && part[i-1] >= '0' && part[i-1] <= '9' {
			i--
		}
		w := word{name: part[:i]}
		if i < len(part) {
			n, err := strconv.Atoi(part[i:])
			if err != nil {
				return nil, false
			}
			w.suffix = n
		}
		if w.name == "" {
			return nil, false
		}
		out = append(out, w)
	}
	return out, true
}

func matches(ws []word, ms ...mnemonic) bool {
	if len(ws) != len(ms) {
		return false
	}
	for i := range ws {
		if !ms[i].match(ws[i].name) {
			return false
		}
	}
	return true
}
