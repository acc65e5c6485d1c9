// Package scpi is the SCPI server core the simulated instruments share: it
// parses program messages, finds each header in an instrument's command
// table, runs its handler, keeps the error queue and the IEEE 488.2 status
// registers, and answers the common commands. An emulator supplies the
// table and its device model, and owns the transport (a TCP socket, a pty)
// and its fault injection; this package imports nothing of the project.
//
// What it implements, and where each rule comes from:
//
//   - Headers are case-insensitive and every element may be given in its
//     short form (the upper-case letters of the documented mnemonic) or its
//     long form; elements in square brackets may be left out; a numeric
//     suffix selects a slot or channel and defaults to 1 when absent
//     (SCPI-99 Vol. 1, "Program headers"; Keysight N77xx Series
//     Programming Guide N7744-90C, "Short Form and Long Form" and "Slot and
//     Channel Numbers").
//   - Several program message units share a line, separated by ';'. A
//     header that does not start with ':' (or '*') is read relative to the
//     node of the previous header: ":INP1:ATT 3;SPE 2" sets
//     :INP1:ATT and then :INP1:SPE (SCPI-99 Vol. 1, "Traversal of the
//     header tree"). A leading ':' returns to the root; common commands
//     leave the current node alone.
//   - The replies to the queries of one line are sent together, joined by
//     ';', and end with the terminator (IEEE 488.2 §8.4, response message
//     units). A line with no query sends nothing back.
//   - Numeric arguments take the documented unit suffixes, with their
//     multipliers (MDB, NM, UM, MS, ...), and MIN|MAX|DEF; queries take
//     MIN|MAX|DEF to report the limits (N7744-90C, :INPut:ATTenuation?).
//   - The error queue is a FIFO of 30 entries by default; when it
//     overflows, the last entry becomes -350,"Queue overflow". An empty
//     queue answers 0,"No error". :SYSTem:ERRor[:NEXT]? pops one entry,
//     :SYSTem:ERRor:ALL? all of them, comma-separated (SCPI-99 Vol. 2,
//     :SYSTem:ERRor; standard numbers and messages in Errors below).
//   - *CLS empties the error queue and the event register; *ESR? reads
//     and clears the Standard Event Status Register; *STB? reports the
//     status byte (bit 2 error queue not empty, bit 5 ESB, bit 6 MSS when
//     a bit is set that *SRE enables); *ESE sets the event enable mask and
//     *SRE the service request enable mask, 0-255, bit 6 ignored (IEEE
//     488.2 §10.34, §11.3.2.3: both mandatory, with their queries); *OPC? answers 1 when nothing is pending and 0 while an
//     operation is (the N77xx answers at once: "returns 1 if operation
//     complete, 0 otherwise", N7744-90C, Common Status Command Summary);
//     *RST clears the error queue and calls the instrument's reset. A query
//     form of a command that has none (*RST?) is -113 Undefined header.
//   - A parameter a header does not take (":INP1:ATT 5,6", "*RST 1") is
//     -108 Parameter not allowed (SCPI-99 Vol. 2, error list; IEEE 488.2
//     §7.1: a program message unit has the parameters its header defines).
package scpi

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// Error is an entry of the error queue: a standard SCPI error number and
// its message, optionally with device-specific detail.
type Error struct {
	Code   int
	Msg    string
	Detail string
}

func (e *Error) Error() string { return e.String() }

// String formats the entry as :SYST:ERR? answers it, always signed:
// -222,"Data out of range", +0,"No error".
func (e *Error) String() string {
	msg := e.Msg
	if e.Detail != "" {
		msg += ";" + e.Detail
	}
	return fmt.Sprintf("%+d,%q", e.Code, msg)
}

// Errorf returns the standard error code with its standard message (from
// Errors), and detail if given.
func Errorf(code int, detail string, args ...any) *Error {
	msg, ok := Errors[code]
	if !ok {
		msg = "Device-specific error"
	}
	if len(args) > 0 {
		detail = fmt.Sprintf(detail, args...)
	}
	return &Error{Code: code, Msg: msg, Detail: detail}
}

// Errors are the standard SCPI error numbers and messages (SCPI-99 Vol. 2,
// the error/event list; IEEE 488.2 §11.5.1 for the classes: -1xx command,
// -2xx execution, -3xx device-dependent, -4xx query errors).
var Errors = map[int]string{
	0:    "No error",
	-100: "Command error",
	-101: "Invalid character",
	-102: "Syntax error",
	-103: "Invalid separator",
	-104: "Data type error",
	-108: "Parameter not allowed",
	-109: "Missing parameter",
	-110: "Command header error",
	-113: "Undefined header",
	-114: "Header suffix out of range",
	-120: "Numeric data error",
	-131: "Invalid suffix",
	-138: "Suffix not allowed",
	-141: "Invalid character data",
	-200: "Execution error",
	-221: "Settings conflict",
	-222: "Data out of range",
	-224: "Illegal parameter value",
	-300: "Device-specific error",
	-350: "Queue overflow",
	-400: "Query error",
	-410: "Query INTERRUPTED",
	-420: "Query UNTERMINATED",
}

// Call is one program message unit as a handler sees it.
type Call struct {
	// Header is the header as resolved (relative headers made absolute),
	// upper case, without the '?'.
	Header string
	// Suffix holds the numeric suffix of each '#' element of the pattern
	// that matched, in order; 1 where the element had none.
	Suffix []int
	// Given says, per entry of Suffix, whether a suffix was typed.
	Given []bool
	Query bool
	// Args are the comma-separated arguments, trimmed, as typed.
	Args []string
}

// N returns the i-th numeric suffix (1 if absent).
func (c *Call) N(i int) int {
	if i < len(c.Suffix) {
		return c.Suffix[i]
	}
	return 1
}

// Arg returns the i-th argument, or "".
func (c *Call) Arg(i int) string {
	if i < len(c.Args) {
		return c.Args[i]
	}
	return ""
}

// Handler runs a command or query. It returns the reply of a query, or an
// error for the queue (any error that is not an *Error becomes -300).
type Handler func(c *Call) (string, error)

// Command is one entry of an instrument's command table.
type Command struct {
	// Pattern is the documented header: mnemonics in mixed case (the upper
	// case letters are the short form), '#' after a mnemonic where a
	// numeric suffix is allowed, optional elements in square brackets,
	// e.g. ":INPut#[:CHANnel#]:ATTenuation" or ":OUTPut#[:STATe]".
	Pattern string
	Set     Handler // nil: the header has no command form
	Get     Handler // nil: the header has no query form
	// Params is how many parameters either form takes at most (for most
	// headers 1: the value of a command, the MIN|MAX|DEF of a query);
	// more is -108 Parameter not allowed. 0: the handler checks.
	Params int
}

type element struct {
	short, long string
	suffix      bool
	optional    bool
}

type compiled struct {
	elems []element
	cmd   Command
}

// Config describes an instrument to the core.
type Config struct {
	// IDN is the reply to *IDN?: vendor,model,serial,firmware.
	IDN string
	// Opt is the reply to *OPT? ("0" if empty).
	Opt string
	// Reset runs on *RST, after the error queue is cleared.
	Reset func()
	// Pending reports whether an operation is still under way: *OPC?
	// answers 0 while it is (the N77xx's behaviour). Nil: *OPC? waits
	// (Wait) and answers 1, as IEEE 488.2 describes.
	Pending func() bool
	// Wait blocks until nothing is pending (*OPC and *WAI). Nil: no-op.
	Wait func()
	// SelfTest is the reply to *TST? (0 = passed).
	SelfTest int
	// QueueSize bounds the error queue (default 30).
	QueueSize int
}

// Instrument is the SCPI state of one instrument: its command table, error
// queue and status registers. Its methods are safe for concurrent use by
// several connections (they share one queue, as the instrument does).
type Instrument struct {
	cfg  Config
	cmds []compiled

	mu    sync.Mutex
	errq  []*Error
	esr   int // Standard Event Status Register
	ese   int // its enable mask
	sre   int // Service Request Enable register (bit 6 always 0)
	execm sync.Mutex
}

// New compiles a command table. It panics on a malformed pattern: tables
// are written by hand and checked by the emulator's tests.
func New(cfg Config, table []Command) *Instrument {
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 30
	}
	in := &Instrument{cfg: cfg, esr: 1 << 7} // bit 7: power on (IEEE 488.2 §11.5.1.1)
	for _, c := range table {
		el, err := compilePattern(c.Pattern)
		if err != nil {
			panic(fmt.Sprintf("scpi: pattern %q: %v", c.Pattern, err))
		}
		in.cmds = append(in.cmds, compiled{el, c})
	}
	return in
}

func compilePattern(p string) ([]element, error) {
	var out []element
	rest := strings.TrimSpace(p)
	for rest != "" {
		opt := false
		var part string
		if strings.HasPrefix(rest, "[") {
			end := strings.Index(rest, "]")
			if end < 0 {
				return nil, fmt.Errorf("unclosed [")
			}
			part, rest, opt = rest[1:end], rest[end+1:], true
		} else {
			rest = strings.TrimPrefix(rest, ":")
			i := strings.IndexAny(rest, ":[")
			if i < 0 {
				i = len(rest)
			}
			part, rest = rest[:i], rest[i:]
		}
		part = strings.TrimPrefix(part, ":")
		suffix := strings.HasSuffix(part, "#")
		part = strings.TrimSuffix(part, "#")
		if part == "" {
			return nil, fmt.Errorf("empty element")
		}
		short := ""
		for _, r := range part {
			if r >= 'A' && r <= 'Z' || r == '*' {
				short += string(r)
			} else {
				break
			}
		}
		if short == "" {
			return nil, fmt.Errorf("element %q has no upper-case short form", part)
		}
		out = append(out, element{short: short, long: strings.ToUpper(part), suffix: suffix, optional: opt})
	}
	return out, nil
}

// typed is one element of a header as received.
type typed struct {
	name   string
	suffix int
	given  bool
}

func splitHeader(h string) ([]typed, *Error) {
	var out []typed
	for _, part := range strings.Split(h, ":") {
		i := len(part)
		for i > 0 && part[i-1] >= '0' && part[i-1] <= '9' {
			i--
		}
		t := typed{name: part[:i], suffix: 1}
		if t.name == "" {
			return nil, Errorf(-113, "")
		}
		for _, r := range t.name {
			if !(r >= 'A' && r <= 'Z' || r == '_' || r >= '0' && r <= '9') {
				return nil, Errorf(-101, "")
			}
		}
		if i < len(part) {
			n, err := strconv.Atoi(part[i:])
			if err != nil {
				return nil, Errorf(-114, "")
			}
			t.suffix, t.given = n, true
		}
		out = append(out, t)
	}
	return out, nil
}

// match tries to match typed elements against pattern elements.
func match(pat []element, ts []typed, sfx []int, given []bool) ([]int, []bool, bool) {
	if len(pat) == 0 {
		return sfx, given, len(ts) == 0
	}
	p := pat[0]
	if len(ts) > 0 && (ts[0].name == p.short || ts[0].name == p.long) && (p.suffix || !ts[0].given) {
		s, g := sfx, given
		if p.suffix {
			s = append(append([]int(nil), sfx...), ts[0].suffix)
			g = append(append([]bool(nil), given...), ts[0].given)
		}
		if s2, g2, ok := match(pat[1:], ts[1:], s, g); ok {
			return s2, g2, true
		}
	}
	if p.optional {
		s, g := sfx, given
		if p.suffix {
			s = append(append([]int(nil), sfx...), 1)
			g = append(append([]bool(nil), given...), false)
		}
		return match(pat[1:], ts, s, g)
	}
	return nil, nil, false
}

// Exec runs one program message (a line without its terminator) and
// returns the response message (the query replies joined by ';') and
// whether there is one to send.
func (in *Instrument) Exec(line string) (string, bool) {
	in.execm.Lock()
	defer in.execm.Unlock()
	var replies []string
	var path string // the current node, for relative headers: "INP1:"
	for _, unit := range splitUnits(line) {
		unit = strings.TrimSpace(unit)
		if unit == "" {
			continue
		}
		header, args, _ := strings.Cut(unit, " ")
		if i := strings.IndexAny(header, "\t"); i >= 0 {
			header, args = header[:i], header[i+1:]+" "+args
		}
		header = strings.ToUpper(strings.TrimSpace(header))
		query := strings.HasSuffix(header, "?")
		header = strings.TrimSuffix(header, "?")
		call := &Call{Query: query, Args: splitArgs(args)}
		var reply string
		var err error
		switch {
		case strings.HasPrefix(header, "*"):
			call.Header = header
			reply, err = in.common(call)
		default:
			abs := header
			if strings.HasPrefix(abs, ":") {
				abs = abs[1:]
			} else {
				abs = path + abs
			}
			call.Header = ":" + abs
			var next string
			reply, next, err = in.run(call, abs)
			if next != "" || err == nil {
				path = next
			}
		}
		if err != nil {
			e, ok := err.(*Error)
			if !ok {
				e = Errorf(-300, "%v", err)
			}
			in.Push(e)
			if e.Code <= -100 && e.Code > -200 {
				// A command error leaves the parser unable to trust the
				// rest of the message (IEEE 488.2 §6.1.6.1.1): discard it.
				break
			}
			continue
		}
		if query {
			replies = append(replies, reply)
		}
	}
	if len(replies) == 0 {
		return "", false
	}
	return strings.Join(replies, ";"), true
}

// splitUnits splits a message at ';' outside quotes.
func splitUnits(s string) []string {
	var out []string
	var q rune
	start := 0
	for i, r := range s {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '"' || r == '\'':
			q = r
		case r == ';':
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// splitArgs splits at ',' outside quotes and parentheses.
func splitArgs(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var out []string
	var q rune
	depth, start := 0, 0
	for i, r := range s {
		switch {
		case q != 0:
			if r == q {
				q = 0
			}
		case r == '"' || r == '\'':
			q = r
		case r == '(':
			depth++
		case r == ')':
			depth--
		case r == ',' && depth == 0:
			out = append(out, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
	}
	return append(out, strings.TrimSpace(s[start:]))
}

// run finds abs in the table and runs it; next is the node the following
// relative header starts from.
func (in *Instrument) run(call *Call, abs string) (string, string, error) {
	ts, e := splitHeader(abs)
	if e != nil {
		return "", "", e
	}
	next := ""
	if i := strings.LastIndex(abs, ":"); i >= 0 {
		next = abs[:i+1]
	}
	if strings.EqualFold(ts[0].name, "SYST") || strings.EqualFold(ts[0].name, "SYSTEM") {
		if r, ok, err := in.system(call, ts); ok {
			return r, next, err
		}
	}
	for _, c := range in.cmds {
		sfx, given, ok := match(c.elems, ts, nil, nil)
		if !ok {
			continue
		}
		call.Suffix, call.Given = sfx, given
		h := c.cmd.Set
		if call.Query {
			h = c.cmd.Get
		}
		if h == nil {
			if call.Query {
				return "", next, Errorf(-113, "no query form")
			}
			return "", next, Errorf(-113, "query only")
		}
		if n := c.cmd.Params; n > 0 && len(call.Args) > n {
			return "", next, Errorf(-108, "%s takes at most %d parameter(s), got %d", call.Header, n, len(call.Args))
		}
		r, err := h(call)
		return r, next, err
	}
	return "", "", Errorf(-113, "")
}

// system answers the error queue queries, which every instrument has.
func (in *Instrument) system(call *Call, ts []typed) (string, bool, error) {
	is := func(t typed, short, long string) bool { return !t.given && (t.name == short || t.name == long) }
	if len(ts) < 2 || !is(ts[1], "ERR", "ERROR") || !call.Query {
		return "", false, nil
	}
	switch {
	case len(ts) == 2, len(ts) == 3 && is(ts[2], "NEXT", "NEXT"):
		return in.Pop().String(), true, nil
	case len(ts) == 3 && is(ts[2], "ALL", "ALL"):
		var all []string
		for {
			e := in.Pop()
			all = append(all, e.String())
			if e.Code == 0 {
				break
			}
		}
		if len(all) > 1 {
			all = all[:len(all)-1]
		}
		return strings.Join(all, ","), true, nil
	case len(ts) == 3 && is(ts[2], "COUN", "COUNT"):
		in.mu.Lock()
		defer in.mu.Unlock()
		return strconv.Itoa(len(in.errq)), true, nil
	}
	return "", false, nil
}

// common answers an IEEE 488.2 common command (*IDN?, *RST, ...): -113
// for one the core does not have or a form the command lacks, -108 for
// a parameter to any but the setting forms of *ESE and *SRE.
func (in *Instrument) common(call *Call) (string, error) {
	c, known := commonCommands[call.Header]
	if !known {
		return "", Errorf(-113, "")
	}
	if len(call.Args) > 0 && (call.Query || !c.param) {
		return "", Errorf(-108, "%s takes no parameter", call.Header)
	}
	h := c.set
	if call.Query {
		h = c.query
	}
	if h == nil {
		return "", Errorf(-113, "")
	}
	return h(in, call)
}

// commonCommand is a common command's query and setting forms (nil: the
// command has no such form); param says the setting form takes one.
type commonCommand struct {
	query, set func(in *Instrument, call *Call) (string, error)
	param      bool
}

// commonCommands are the common commands the core answers.
var commonCommands = map[string]commonCommand{
	"*IDN": {query: func(in *Instrument, _ *Call) (string, error) { return in.cfg.IDN, nil }},
	"*OPT": {query: (*Instrument).options},
	"*TST": {query: func(in *Instrument, _ *Call) (string, error) { return strconv.Itoa(in.cfg.SelfTest), nil }},
	"*CLS": {set: (*Instrument).clearStatus},
	"*RST": {set: (*Instrument).reset},
	"*OPC": {query: (*Instrument).operationComplete, set: (*Instrument).setOperationComplete},
	"*WAI": {set: func(in *Instrument, _ *Call) (string, error) { in.wait(); return "", nil }},
	"*ESR": {query: (*Instrument).eventStatus},
	"*ESE": {query: (*Instrument).enableRegister, set: (*Instrument).setEnableRegister, param: true},
	"*SRE": {query: (*Instrument).enableRegister, set: (*Instrument).setEnableRegister, param: true},
	"*STB": {query: (*Instrument).statusByte},
}

// wait waits for the pending operations, when the instrument has any.
func (in *Instrument) wait() {
	if in.cfg.Wait != nil {
		in.cfg.Wait()
	}
}

// options answers *OPT?: the installed options, 0 for none.
func (in *Instrument) options(*Call) (string, error) {
	if in.cfg.Opt == "" {
		return "0", nil
	}
	return in.cfg.Opt, nil
}

// clearStatus (*CLS) empties the error queue and the event register.
func (in *Instrument) clearStatus(*Call) (string, error) {
	in.mu.Lock()
	in.errq, in.esr = nil, 0
	in.mu.Unlock()
	return "", nil
}

// reset (*RST) empties the error queue and loads the default settings.
func (in *Instrument) reset(*Call) (string, error) {
	in.mu.Lock()
	in.errq = nil
	in.mu.Unlock()
	if in.cfg.Reset != nil {
		in.cfg.Reset()
	}
	return "", nil
}

// setOperationComplete (*OPC) sets the event register's operation
// complete bit once every pending operation has finished.
func (in *Instrument) setOperationComplete(*Call) (string, error) {
	in.wait()
	in.mu.Lock()
	in.esr |= 1 // operation complete
	in.mu.Unlock()
	return "", nil
}

// operationComplete answers *OPC?.
func (in *Instrument) operationComplete(*Call) (string, error) {
	if in.cfg.Pending != nil {
		// The instrument answers at once, 0 while pending (N77xx).
		if in.cfg.Pending() {
			return "0", nil
		}
		return "1", nil
	}
	// IEEE 488.2 §12.5.3: "1" goes to the output queue once every
	// pending operation has finished.
	in.wait()
	return "1", nil
}

// eventStatus answers *ESR? and clears the event register.
func (in *Instrument) eventStatus(*Call) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	v := in.esr
	in.esr = 0
	return strconv.Itoa(v), nil
}

// enableReg is the enable register *ESE or *SRE names.
func (in *Instrument) enableReg(header string) *int {
	if header == "*SRE" {
		return &in.sre
	}
	return &in.ese
}

// enableRegister answers *ESE? and *SRE?.
func (in *Instrument) enableRegister(call *Call) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	return strconv.Itoa(*in.enableReg(call.Header)), nil
}

// setEnableRegister sets *ESE or *SRE to a value from 0 to 255.
func (in *Instrument) setEnableRegister(call *Call) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case len(call.Args) == 0:
		return "", Errorf(-109, "")
	case len(call.Args) > 1:
		return "", Errorf(-108, "%s takes one parameter", call.Header)
	}
	v, err := strconv.Atoi(call.Arg(0))
	if err != nil {
		return "", Errorf(-104, "")
	}
	if v < 0 || v > 255 {
		return "", Errorf(-222, "")
	}
	if call.Header == "*SRE" {
		v &^= 1 << 6 // IEEE 488.2 §11.3.2.3: bit 6 of the SRE is ignored
	}
	*in.enableReg(call.Header) = v
	return "", nil
}

// statusByte answers *STB?.
func (in *Instrument) statusByte(*Call) (string, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	stb := 0
	if len(in.errq) > 0 {
		stb |= 1 << 2 // error/event queue not empty (SCPI-99 Vol. 1, status byte)
	}
	if in.esr&in.ese != 0 {
		stb |= 1 << 5 // ESB
	}
	if stb&in.sre != 0 {
		stb |= 1 << 6 // MSS: a summary bit that *SRE enables is set (IEEE 488.2 §11.2.2.2)
	}
	return strconv.Itoa(stb), nil
}

// Push appends an error to the queue, replacing the last entry with -350
// when the queue is full, and sets its class's bit in the event register.
func (in *Instrument) Push(e *Error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	switch {
	case e.Code <= -100 && e.Code > -200:
		in.esr |= 1 << 5 // command error
	case e.Code <= -200 && e.Code > -300:
		in.esr |= 1 << 4 // execution error
	case e.Code <= -400 && e.Code > -500:
		in.esr |= 1 << 2 // query error
	default:
		in.esr |= 1 << 3 // device-dependent error
	}
	if len(in.errq) >= in.cfg.QueueSize {
		in.errq[len(in.errq)-1] = Errorf(-350, "")
		return
	}
	in.errq = append(in.errq, e)
}

// Pop takes the oldest error, or 0,"No error".
func (in *Instrument) Pop() *Error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if len(in.errq) == 0 {
		return &Error{Code: 0, Msg: "No error"}
	}
	e := in.errq[0]
	in.errq = in.errq[1:]
	return e
}

// Units maps a unit suffix (upper case) to its multiplier of the base unit.
type Units map[string]float64

// Unit tables the instruments document.
var (
	// DB: attenuation and offsets (N7744-90C, :INPut:ATTenuation <value>[dB]).
	DB = Units{"DB": 1, "MDB": 1e-3}
	// Metre: wavelengths; no suffix means metres (N7744-90C, :INPut:WAVelength
	// <value>[PM|NM|UM|MM|M]).
	Metre = Units{"M": 1, "MM": 1e-3, "UM": 1e-6, "NM": 1e-9, "PM": 1e-12}
	// Second: times (N7744-90C, :OUTPut:ATIMe <value>[NS|US|MS|S]).
	Second = Units{"S": 1, "MS": 1e-3, "US": 1e-6, "NS": 1e-9}
	// DBPerSecond: attenuation speed, no suffix.
	DBPerSecond = Units{}
)

// Limits are a parameter's range and default, for MIN|MAX|DEF.
type Limits struct{ Min, Max, Def float64 }

// Number parses a numeric argument with an optional unit suffix (from
// units; none means the base unit), or MIN|MAX|DEF (short or long form).
// Out-of-range values are -222, unparsable ones -104 or -131.
func Number(arg string, units Units, l Limits) (float64, error) {
	a := strings.ToUpper(strings.TrimSpace(arg))
	switch a {
	case "":
		return 0, Errorf(-109, "")
	case "MIN", "MINIMUM":
		return l.Min, nil
	case "MAX", "MAXIMUM":
		return l.Max, nil
	case "DEF", "DEFAULT":
		return l.Def, nil
	}
	i := len(a)
	for i > 0 && (a[i-1] >= 'A' && a[i-1] <= 'Z') {
		i--
	}
	// An exponent's E belongs to the number: 1.55E-06, 2E3.
	num, unit := strings.TrimSpace(a[:i]), a[i:]
	if unit == "E" {
		num, unit = a, ""
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v != v {
		return 0, Errorf(-104, "%q is not a number", arg)
	}
	if unit != "" {
		m, ok := units[unit]
		if !ok {
			return 0, Errorf(-131, "%q", unit)
		}
		v *= m
	}
	if v < l.Min-1e-12*max(1, abs(l.Min)) || v > l.Max+1e-12*max(1, abs(l.Max)) {
		return 0, Errorf(-222, "")
	}
	return v, nil
}

func abs(v float64) float64 {
	if v < 0 {
		return -v
	}
	return v
}

// QueryLimit answers a query's optional MIN|MAX|DEF argument: ok is false
// when there is none (the query asks for the current value).
func QueryLimit(c *Call, l Limits) (float64, bool, error) {
	if len(c.Args) == 0 {
		return 0, false, nil
	}
	switch strings.ToUpper(c.Args[0]) {
	case "MIN", "MINIMUM":
		return l.Min, true, nil
	case "MAX", "MAXIMUM":
		return l.Max, true, nil
	case "DEF", "DEFAULT":
		return l.Def, true, nil
	}
	return 0, false, Errorf(-224, "expected MIN, MAX or DEF")
}

// Bool parses OFF|ON|0|1.
func Bool(arg string) (bool, error) {
	switch strings.ToUpper(strings.TrimSpace(arg)) {
	case "1", "ON":
		return true, nil
	case "0", "OFF":
		return false, nil
	case "":
		return false, Errorf(-109, "")
	}
	return false, Errorf(-224, "expected 0, 1, OFF or ON")
}

// Float formats a value as the N77xx instruments answer numeric queries:
// a sign, 8 decimals and a three-digit exponent, +1.55000000E-006
// (N7744-90C, the examples of :INPut:WAVelength? and :SENSe:CORRection?).
func Float(v float64) string {
	s := strconv.FormatFloat(v, 'E', 8, 64)
	mant, exp, _ := strings.Cut(s, "E")
	sign := exp[:1]
	digits := exp[1:]
	for len(digits) < 3 {
		digits = "0" + digits
	}
	if !strings.HasPrefix(mant, "-") {
		mant = "+" + mant
	}
	return mant + "E" + sign + digits
}
