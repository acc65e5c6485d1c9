// Package inventory describes a lab: its devices (kind, driver, address,
// limits, safe state, credentials by reference) and the fibres between them.
// It loads and validates YAML inventories, reporting every problem with the
// file, line and field, and produces redacted copies for result bundles.
package inventory

import (
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	"testbed/internal/readfile"
)

// Kinds of device an inventory may list.
func Kinds() []string { return []string{"voa", "trafficgen", "switch", "host", "ocs", "fabric"} }

// Inventory is one lab.
type Inventory struct {
	Path    string
	Version int
	Name    string
	Devices map[string]*Device
	Links   []*Link
}

// Device is one instrument or device under test.
type Device struct {
	Name        string
	Kind        string
	Driver      string
	Address     string
	Description string
	Timeout     time.Duration
	Channels    int
	Limits      *Limits
	SafeState   *SafeState
	Credentials *Credentials
	Ports       map[string]string
	Options     map[string]string
	Pos         Pos
	FieldPos    map[string]Pos
}

// Limits bound what may be sent to a VOA.
type Limits struct {
	MinDB float64 `yaml:"min_db"`
	MaxDB float64 `yaml:"max_db"`
}

// SafeState is where a device rests between runs.
type SafeState struct {
	AttenuationDB *float64 `yaml:"attenuation_db,omitempty"`
}

// Credentials are references to secrets, never the secrets themselves.
type Credentials struct {
	PasswordEnv  string `yaml:"password_env,omitempty"`
	PasswordFile string `yaml:"password_file,omitempty"`
	KeyFile      string `yaml:"key_file,omitempty"`
	SSHAgent     bool   `yaml:"ssh_agent,omitempty"`
}

// Link is a fibre between two device ports.
type Link struct {
	Name           string
	A, B           Endpoint
	Transceiver    string
	FEC            string
	VOA            *VOARef
	LossAfterVOADB float64
	// Options are the link's options: map as written; its optical budget
	// (fibre_length_m, fibre_type, loss_before_voa_db, loss_after_voa_db)
	// is read from it into the fields below when the inventory loads.
	Options map[string]string
	// FibreLengthM and FibreType are the fibre run between the VOA (or
	// the transmitter) and the receiver; 0 and "" when not given.
	FibreLengthM float64
	FibreType    string
	// LossBeforeVOADB is the connector and patch-cord loss between the
	// transmitter and the VOA; nil when not given.
	LossBeforeVOADB *float64
	// DataPath marks the link host traffic between its two devices
	// crosses where several links join them (option data_path).
	DataPath bool
	// lossAfterGiven says LossAfterVOADB was written (0 is a value).
	lossAfterGiven bool
	Pos            Pos
	FieldPos       map[string]Pos
}

// FibreTypes are the fibre types a link's fibre_type may name, with their
// cabled attenuation in dB/km at the wavelength their transceivers use:
//   - OM3, OM4 (50/125 um multimode) at 850 nm: 3.5 dB/km, the value
//     IEEE 802.3 uses for the channel budgets of its multimode PMDs
//     (cl. 52.14 10GBASE-SR, cl. 95.11 100GBASE-SR4, cl. 112 25GBASE-SR;
//     TIA-568.3-D and ISO/IEC 11801-1 allow 3.0-3.5 dB/km);
//   - OS2 (single-mode, ITU-T G.652.D) at 1310 nm: 0.4 dB/km
//     (TIA-568.3-D and ISO/IEC 11801-1 for OS2; IEEE 802.3 cl. 52 and 88
//     budgets).
func FibreTypes() map[string]FibreType {
	return map[string]FibreType{
		"OM3": {Name: "OM3", DBPerKm: 3.5, Multimode: true},
		"OM4": {Name: "OM4", DBPerKm: 3.5, Multimode: true},
		"OS2": {Name: "OS2", DBPerKm: 0.4, Multimode: false},
	}
}

// FibreType is a kind of optical fibre.
type FibreType struct {
	Name      string
	DBPerKm   float64
	Multimode bool
}

// DefaultFibreType is the fibre a link's length runs over when it names
// none: OM4, what the short-reach (SR) transceivers are specified on.
const DefaultFibreType = "OM4"

// FibreLossDB is the attenuation of the link's fibre run: its length
// times its type's loss per km; 0 without a length.
func (l *Link) FibreLossDB() float64 {
	if l.FibreLengthM <= 0 {
		return 0
	}
	t := l.FibreType
	if t == "" {
		t = DefaultFibreType
	}
	return FibreTypes()[t].DBPerKm * l.FibreLengthM / 1000
}

// Budget is the link's optical loss besides any VOA: before the VOA (the
// transmitter's connectors and patch cord) and after it (connectors, patch
// cord and the fibre run to the receiver). Losses the inventory does not
// give are the defaults passed in.
func (l *Link) Budget(defBeforeDB, defAfterDB float64) (beforeDB, afterDB float64) {
	beforeDB, afterDB = defBeforeDB, defAfterDB
	if l.LossBeforeVOADB != nil {
		beforeDB = *l.LossBeforeVOADB
	}
	if l.lossAfterGiven || l.LossAfterVOADB > 0 {
		afterDB = l.LossAfterVOADB
	}
	return beforeDB, afterDB + l.FibreLossDB()
}

// Endpoint is one end of a link.
type Endpoint struct {
	Device string `yaml:"device"`
	Port   string `yaml:"port,omitempty"`
}

// VOARef names the VOA channel on a link (in the a -> b direction).
type VOARef struct {
	Device  string `yaml:"device"`
	Channel int    `yaml:"channel"`
}

// Pos is a place in an inventory file.
type Pos struct {
	File   string
	Line   int
	Column int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Column)
}

// TransceiverType is an optical module type a link may use.
type TransceiverType struct {
	Name       string
	RateBps    float64
	FECs       []string
	DefaultFEC string
	// Multimode: the module runs on multimode fibre (OM3/OM4, 850 nm).
	Multimode bool
}

// Transceivers lists the known module types (IEEE 802.3 clauses 52, 112,
// 138, 95) with the FEC modes each supports.
func Transceivers() []TransceiverType {
	return []TransceiverType{
		{Name: "10GBASE-SR", RateBps: 10e9, FECs: []string{"none"}, DefaultFEC: "none", Multimode: true},
		{Name: "25GBASE-SR", RateBps: 25e9, FECs: []string{"none", "rs528"}, DefaultFEC: "rs528", Multimode: true},
		{Name: "50GBASE-SR", RateBps: 50e9, FECs: []string{"rs544", "none"}, DefaultFEC: "rs544", Multimode: true},
		{Name: "100GBASE-SR4", RateBps: 100e9, FECs: []string{"rs528", "none"}, DefaultFEC: "rs528", Multimode: true},
		// RAIL's lab (§7.1): 40GBASE-SR4 (cl. 86, no FEC) and 10GBASE-LR
		// (cl. 52, 1310 nm on single-mode).
		{Name: "40GBASE-SR4", RateBps: 40e9, FECs: []string{"none"}, DefaultFEC: "none", Multimode: true},
		{Name: "10GBASE-LR", RateBps: 10e9, FECs: []string{"none"}, DefaultFEC: "none", Multimode: false},
	}
}

// LookupTransceiver finds a module type by name.
func LookupTransceiver(name string) (TransceiverType, bool) {
	for _, t := range Transceivers() {
		if t.Name == name {
			return t, true
		}
	}
	return TransceiverType{}, false
}

// MaxFileBytes bounds an inventory file: a lab of thousands of devices and
// links is a few megabytes of YAML.
const MaxFileBytes = 16 << 20

// maxSecretFileBytes bounds a password or key file a credential names.
const maxSecretFileBytes = 1 << 20

// Load reads and validates an inventory file.
func Load(path string) (*Inventory, error) {
	data, err := readfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return Parse(path, data)
}

// LoadPartial is Load that returns the inventory as far as it parsed
// beside its problems (see ParsePartial).
func LoadPartial(path string) (*Inventory, error) {
	data, err := readfile.Read(path, MaxFileBytes)
	if err != nil {
		return nil, fmt.Errorf("inventory: %w", err)
	}
	return ParsePartial(path, data)
}

// DeviceNames lists the devices, sorted.
func (inv *Inventory) DeviceNames() []string {
	out := make([]string, 0, len(inv.Devices))
	for n := range inv.Devices {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Device returns the named device.
func (inv *Inventory) Device(name string) (*Device, bool) {
	d, ok := inv.Devices[name]
	return d, ok
}

// Link returns the named link.
func (inv *Inventory) Link(name string) (*Link, bool) {
	for _, l := range inv.Links {
		if l.Name == name {
			return l, true
		}
	}
	return nil, false
}

// LinksWithVOA lists the links that have a VOA channel on them.
func (inv *Inventory) LinksWithVOA() []*Link {
	var out []*Link
	for _, l := range inv.Links {
		if l.VOA != nil {
			out = append(out, l)
		}
	}
	return out
}

// Problem is one thing wrong with an inventory.
type Problem struct {
	Pos   Pos
	Field string
	Msg   string
}

func (p Problem) String() string {
	if p.Field == "" {
		return fmt.Sprintf("%s: %s", p.Pos, p.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", p.Pos, p.Field, p.Msg)
}

// ValidationError lists every problem found.
type ValidationError struct{ Problems []Problem }

func (e *ValidationError) Error() string {
	var lines []string
	for _, p := range e.Problems {
		lines = append(lines, p.String())
	}
	return strings.Join(lines, "\n")
}

func (inv *Inventory) pos(fieldPos map[string]Pos, field string, fallback Pos) Pos {
	if p, ok := fieldPos[field]; ok {
		return p
	}
	if fallback.File == "" {
		fallback.File = inv.Path
	}
	return fallback
}

// DeviceErrorf makes a positioned error about a device field, for other
// packages to report problems the way the loader does.
func (inv *Inventory) DeviceErrorf(d *Device, field, format string, args ...any) error {
	f := "devices." + d.Name
	if field != "" {
		f += "." + field
	}
	return &ValidationError{Problems: []Problem{{Pos: inv.pos(d.FieldPos, field, d.Pos), Field: f, Msg: fmt.Sprintf(format, args...)}}}
}

// LinkErrorf makes a positioned error about a link field.
func (inv *Inventory) LinkErrorf(l *Link, field, format string, args ...any) error {
	f := "links." + l.Name
	if field != "" {
		f += "." + field
	}
	return &ValidationError{Problems: []Problem{{Pos: inv.pos(l.FieldPos, field, l.Pos), Field: f, Msg: fmt.Sprintf(format, args...)}}}
}

// Secrets resolves every credential reference to its value, for scrubbing
// transcripts and bundles. A missing variable or unreadable file yields no
// value (the driver that needs it will say so).
func (inv *Inventory) Secrets() ([]string, error) {
	var out []string
	for _, n := range inv.DeviceNames() {
		c := inv.Devices[n].Credentials
		if c == nil {
			continue
		}
		if c.PasswordEnv != "" {
			if v := os.Getenv(c.PasswordEnv); v != "" {
				out = append(out, v)
			}
		}
		for _, f := range []string{c.PasswordFile, c.KeyFile} {
			if f == "" {
				continue
			}
			if b, err := readfile.Read(expandHome(f), maxSecretFileBytes); err == nil {
				if v := strings.TrimSpace(string(b)); v != "" {
					out = append(out, v)
				}
			}
		}
	}
	return out, nil
}

// ExpandHome replaces a leading "~/" with the user's home directory.
func ExpandHome(p string) string { return expandHome(p) }

// Password resolves a password reference (environment variable or file);
// "" when there is none.
func (c *Credentials) Password() (string, error) {
	if c == nil {
		return "", nil
	}
	if c.PasswordEnv != "" {
		v := os.Getenv(c.PasswordEnv)
		if v == "" {
			return "", fmt.Errorf("credentials.password_env: $%s is empty or unset", c.PasswordEnv)
		}
		return v, nil
	}
	if c.PasswordFile != "" {
		b, err := readfile.Read(expandHome(c.PasswordFile), maxSecretFileBytes)
		if err != nil {
			return "", fmt.Errorf("credentials.password_file: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	return "", nil
}

func expandHome(p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return h + p[1:]
		}
	}
	return p
}

// Redacted is the inventory as JSON-able data for a bundle manifest:
// credential references (variable names, file paths) kept, values never.
// An option's value is kept only when its key is known to be safe
// (SafeOptionKeys, or a reference: a key ending in _env or _file, which
// Load checked holds a variable's name or a path); any other option's
// value is masked, whatever its name, so that a secret under a name
// nobody listed never reaches a bundle.
func (inv *Inventory) Redacted() map[string]any {
	var doc fileDoc
	inv.toDoc(&doc)
	b, _ := yaml.Marshal(doc)
	var m map[string]any
	_ = yaml.Unmarshal(b, &m)
	if devs, ok := m["devices"].(map[string]any); ok {
		for _, d := range devs {
			if dm, ok := d.(map[string]any); ok {
				maskOptions(dm)
			}
		}
	}
	if links, ok := m["links"].([]any); ok {
		for _, l := range links {
			if lm, ok := l.(map[string]any); ok {
				maskOptions(lm)
			}
		}
	}
	return m
}

// SafeOptionKeys are the device and link options whose values are lab
// facts, never secrets: the ones the drivers, the simulated lab and the
// recipes read.
var SafeOptionKeys = []string{
	"agent_dir", "agent_ssh", "artifacts", "data_path", "fibre_length_m", "fibre_type", "hostagent_amd64", "hostagent_source",
	"hostagent_version", "insecure_tls", "ip", "known_hosts", "loss_after_voa_db", "loss_before_voa_db", "max_slots",
	"ports", "reactor", "reactor_eps_gbps", "reconfig_dist", "reconfig_sd_us", "role", "sde", "serial",
	"stardust_id", "stardust_role", "state_dir", "switch_time_ms", "sysctl", "temperature_c",
}

// OptionMask replaces an option value a bundle does not carry.
const OptionMask = "***"

func maskOptions(m map[string]any) {
	opts, ok := m["options"].(map[string]any)
	if !ok {
		return
	}
	for k := range opts {
		l := strings.ToLower(k)
		if slices.Contains(SafeOptionKeys, l) || strings.HasSuffix(l, "_env") || strings.HasSuffix(l, "_file") {
			continue
		}
		opts[k] = OptionMask
	}
}

// Marshal writes the inventory as YAML that Load reads back.
func (inv *Inventory) Marshal() ([]byte, error) {
	var doc fileDoc
	inv.toDoc(&doc)
	return yaml.Marshal(doc)
}
