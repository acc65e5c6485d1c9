package inventory

import (
	"errors"
	"fmt"
	"math"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// fileDoc is the YAML shape, used to write inventories back out.
type fileDoc struct {
	Version int               `yaml:"version"`
	Name    string            `yaml:"name"`
	Devices map[string]devDoc `yaml:"devices"`
	Links   []linkDoc         `yaml:"links,omitempty"`
}

type devDoc struct {
	Kind        string            `yaml:"kind"`
	Driver      string            `yaml:"driver"`
	Address     string            `yaml:"address"`
	Description string            `yaml:"description,omitempty"`
	Timeout     string            `yaml:"timeout,omitempty"`
	Channels    int               `yaml:"channels,omitempty"`
	Limits      *Limits           `yaml:"limits,omitempty"`
	SafeState   *SafeState        `yaml:"safe_state,omitempty"`
	Credentials *Credentials      `yaml:"credentials,omitempty"`
	Ports       map[string]string `yaml:"ports,omitempty"`
	Options     map[string]string `yaml:"options,omitempty"`
}

type linkDoc struct {
	Name           string            `yaml:"name"`
	A              Endpoint          `yaml:"a"`
	B              Endpoint          `yaml:"b"`
	Transceiver    string            `yaml:"transceiver"`
	FEC            string            `yaml:"fec,omitempty"`
	VOA            *VOARef           `yaml:"voa,omitempty"`
	LossAfterVOADB float64           `yaml:"loss_after_voa_db,omitempty"`
	Options        map[string]string `yaml:"options,omitempty"`
}

func (inv *Inventory) toDoc(doc *fileDoc) {
	doc.Version, doc.Name = inv.Version, inv.Name
	doc.Devices = map[string]devDoc{}
	for n, d := range inv.Devices {
		dd := devDoc{Kind: d.Kind, Driver: d.Driver, Address: d.Address, Description: d.Description, Channels: d.Channels,
			Limits: d.Limits, SafeState: d.SafeState, Credentials: d.Credentials, Ports: d.Ports, Options: d.Options}
		if d.Timeout > 0 {
			dd.Timeout = d.Timeout.String()
		}
		doc.Devices[n] = dd
	}
	for _, l := range inv.Links {
		ld := linkDoc{Name: l.Name, A: l.A, B: l.B, Transceiver: l.Transceiver, FEC: l.FEC, VOA: l.VOA, LossAfterVOADB: l.LossAfterVOADB, Options: l.Options}
		if _, ok := l.Options["loss_after_voa_db"]; ok {
			ld.LossAfterVOADB = 0 // written once, where the user wrote it
		}
		doc.Links = append(doc.Links, ld)
	}
}

// parser collects problems while walking the YAML tree.
type parser struct {
	file     string
	problems []Problem
}

func (p *parser) at(n *yaml.Node) Pos { return Pos{File: p.file, Line: n.Line, Column: n.Column} }

func (p *parser) add(n *yaml.Node, field, format string, args ...any) {
	p.problems = append(p.problems, Problem{Pos: p.at(n), Field: field, Msg: fmt.Sprintf(format, args...)})
}

// fields walks a mapping node, reporting unknown and duplicate keys, and
// returns key -> (key node, value node).
func (p *parser) fields(n *yaml.Node, path string, allowed []string) map[string][2]*yaml.Node {
	out := map[string][2]*yaml.Node{}
	if n.Kind != yaml.MappingNode {
		p.add(n, path, "expected a mapping, got %s", kindName(n))
		return out
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if _, dup := out[k.Value]; dup {
			p.add(k, join(path, k.Value), "defined twice")
			continue
		}
		if allowed != nil && !slices.Contains(allowed, k.Value) {
			if looksSecret(k.Value) {
				p.add(k, join(path, k.Value), "secrets are never written in an inventory: refer to them under credentials with password_env, password_file, key_file or ssh_agent")
			} else {
				p.add(k, join(path, k.Value), "unknown field %q (expected one of: %s)", k.Value, strings.Join(allowed, ", "))
			}
			continue
		}
		out[k.Value] = [2]*yaml.Node{k, v}
	}
	return out
}

func looksSecret(k string) bool { return secretWord(k) != "" }

func join(path, f string) string {
	if path == "" {
		return f
	}
	return path + "." + f
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

func (p *parser) str(kv [2]*yaml.Node, field string) string {
	if kv[1] == nil {
		return ""
	}
	if kv[1].Kind != yaml.ScalarNode {
		p.add(kv[1], field, "expected a string, got %s", kindName(kv[1]))
		return ""
	}
	return kv[1].Value
}

func (p *parser) decode(kv [2]*yaml.Node, field string, out any, what string) bool {
	if err := kv[1].Decode(out); err != nil {
		p.add(kv[1], field, "expected %s: %s", what, cleanYAMLErr(err))
		return false
	}
	// YAML's .nan and .inf decode as numbers; no limit, loss or length
	// of a lab is one (a NaN limit passes every comparison).
	if f, ok := out.(*float64); ok && (math.IsNaN(*f) || math.IsInf(*f, 0)) {
		p.add(kv[1], field, "expected %s, got %s: not a finite number", what, kv[1].Value)
		*f = 0
		return false
	}
	return true
}

func cleanYAMLErr(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "yaml: unmarshal errors:\n")
	return strings.TrimSpace(s)
}

var (
	topFields  = []string{"version", "name", "devices", "links"}
	devFields  = []string{"kind", "driver", "address", "description", "timeout", "channels", "limits", "safe_state", "credentials", "ports", "options"}
	linkFields = []string{"name", "a", "b", "transceiver", "fec", "voa", "loss_after_voa_db", "options"}
	// linkOptions are the keys a link's options: may hold.
	linkOptions = []string{"fibre_length_m", "fibre_type", "loss_before_voa_db", "loss_after_voa_db", "data_path"}
	credFields  = []string{"password_env", "password_file", "key_file", "ssh_agent"}
)

// Parse reads an inventory from YAML; path is used in messages. Every
// problem is reported, each with file, line, column and field, in one
// pass: what parses is validated too, and the problems come sorted by
// line.
func Parse(path string, data []byte) (*Inventory, error) {
	inv, err := ParsePartial(path, data)
	if err != nil {
		return nil, err
	}
	return inv, nil
}

// ParsePartial is Parse that also returns, beside its problems, the
// inventory as far as it parsed (nil only when the file is not YAML or
// empty), so that a caller can add checks of its own (drivers) to one
// report.
func ParsePartial(path string, data []byte) (*Inventory, error) {
	p := &parser{file: path}
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	inv := &Inventory{Path: path, Devices: map[string]*Device{}}
	if len(root.Content) == 0 {
		return nil, fmt.Errorf("%s: empty inventory (expected version, name, devices, links)", path)
	}
	top := p.fields(root.Content[0], "", topFields)
	if kv, ok := top["version"]; ok {
		p.decode(kv, "version", &inv.Version, "an integer")
	}
	if inv.Version != 1 {
		n := root.Content[0]
		if kv, ok := top["version"]; ok {
			n = kv[1]
		}
		p.add(n, "version", "inventory version %d is not supported (expected version: 1)", inv.Version)
	}
	inv.Name = p.str(top["name"], "name")
	if inv.Name == "" {
		inv.Name = "lab"
	}
	if kv, ok := top["devices"]; ok {
		devs := p.fields(kv[1], "devices", nil)
		for _, name := range sortedKeys(devs) {
			d := p.device(name, devs[name])
			inv.Devices[name] = d
		}
	} else {
		p.add(root.Content[0], "devices", "missing: an inventory lists its devices")
	}
	if kv, ok := top["links"]; ok {
		if kv[1].Kind != yaml.SequenceNode {
			p.add(kv[1], "links", "expected a list, got %s", kindName(kv[1]))
		} else {
			for i, n := range kv[1].Content {
				inv.Links = append(inv.Links, p.link(i, n))
			}
		}
	}
	// Validate what parsed: a field the parser already reported is not
	// reported again as missing or wrong.
	ps := p.problems
	var ve *ValidationError
	if err := inv.Validate(); errors.As(err, &ve) {
		ps = MergeProblems(ps, ve.Problems)
	}
	if len(ps) > 0 {
		return inv, &ValidationError{Problems: ps}
	}
	return inv, nil
}

// MergeProblems adds more to ps, leaving out a problem of a field (or of
// a field under one) ps already reports, and sorts the whole by file,
// line and column.
func MergeProblems(ps, more []Problem) []Problem {
	out := append([]Problem(nil), ps...)
	for _, m := range more {
		dup := false
		for _, p := range ps {
			dup = dup || (p.Field != "" && (m.Field == p.Field || strings.HasPrefix(m.Field, p.Field+".")))
		}
		if !dup {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Problem) int {
		if a.Pos.File != b.Pos.File {
			return strings.Compare(a.Pos.File, b.Pos.File)
		}
		if a.Pos.Line != b.Pos.Line {
			return a.Pos.Line - b.Pos.Line
		}
		return a.Pos.Column - b.Pos.Column
	})
	return out
}

func sortedKeys(m map[string][2]*yaml.Node) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b string) int { return m[a][0].Line - m[b][0].Line })
	return out
}

func (p *parser) device(name string, kv [2]*yaml.Node) *Device {
	path := "devices." + name
	d := &Device{Name: name, Pos: p.at(kv[0]), FieldPos: map[string]Pos{}}
	f := p.fields(kv[1], path, devFields)
	for k, v := range f {
		d.FieldPos[k] = p.at(v[1])
	}
	d.Kind = p.str(f["kind"], path+".kind")
	d.Driver = p.str(f["driver"], path+".driver")
	d.Address = p.str(f["address"], path+".address")
	d.Description = p.str(f["description"], path+".description")
	if kv, ok := f["timeout"]; ok {
		s := p.str(kv, path+".timeout")
		t, err := time.ParseDuration(s)
		if err != nil || t <= 0 {
			p.add(kv[1], path+".timeout", "%q is not a positive duration (e.g. 5s, 500ms)", s)
		}
		d.Timeout = t
	}
	if kv, ok := f["channels"]; ok {
		p.decode(kv, path+".channels", &d.Channels, "an integer")
	}
	if kv, ok := f["limits"]; ok {
		lf := p.fields(kv[1], path+".limits", []string{"min_db", "max_db"})
		d.Limits = &Limits{}
		if x, ok := lf["min_db"]; ok {
			p.decode(x, path+".limits.min_db", &d.Limits.MinDB, "a number in dB")
		}
		if x, ok := lf["max_db"]; ok {
			p.decode(x, path+".limits.max_db", &d.Limits.MaxDB, "a number in dB")
		} else {
			p.add(kv[1], path+".limits.max_db", "missing")
		}
	}
	if kv, ok := f["safe_state"]; ok {
		sf := p.fields(kv[1], path+".safe_state", []string{"attenuation_db"})
		d.SafeState = &SafeState{}
		if x, ok := sf["attenuation_db"]; ok {
			var v float64
			if p.decode(x, path+".safe_state.attenuation_db", &v, "a number in dB") {
				d.SafeState.AttenuationDB = &v
			}
			d.FieldPos["safe_state.attenuation_db"] = p.at(x[1])
		}
	}
	if kv, ok := f["credentials"]; ok {
		cp := path + ".credentials"
		cf := p.fields(kv[1], cp, nil)
		for k, x := range cf {
			if slices.Contains(credFields, k) {
				continue
			}
			if looksSecret(k) {
				p.add(x[0], cp+"."+k, "secrets are never written in an inventory: refer to them with password_env, password_file, key_file or ssh_agent")
			} else {
				p.add(x[0], cp+"."+k, "unknown field %q (expected one of: %s)", k, strings.Join(credFields, ", "))
			}
		}
		c := &Credentials{}
		c.PasswordEnv = p.str(cf["password_env"], cp+".password_env")
		c.PasswordFile = p.str(cf["password_file"], cp+".password_file")
		c.KeyFile = p.str(cf["key_file"], cp+".key_file")
		if x, ok := cf["ssh_agent"]; ok {
			p.decode(x, cp+".ssh_agent", &c.SSHAgent, "true or false")
		}
		d.Credentials = c
	}
	if kv, ok := f["ports"]; ok {
		p.decode(kv, path+".ports", &d.Ports, "a map of port name to generator location")
	}
	if kv, ok := f["options"]; ok {
		p.decode(kv, path+".options", &d.Options, "a map of strings")
		if kv[1].Kind == yaml.MappingNode {
			for i := 0; i+1 < len(kv[1].Content); i += 2 {
				d.FieldPos["options."+kv[1].Content[i].Value] = p.at(kv[1].Content[i])
			}
		}
	}
	return d
}

func (p *parser) link(i int, n *yaml.Node) *Link {
	path := fmt.Sprintf("links[%d]", i)
	l := &Link{Pos: p.at(n), FieldPos: map[string]Pos{}}
	f := p.fields(n, path, linkFields)
	for k, v := range f {
		l.FieldPos[k] = p.at(v[1])
	}
	l.Name = p.str(f["name"], path+".name")
	for _, end := range []string{"a", "b"} {
		kv, ok := f[end]
		if !ok {
			p.add(n, path+"."+end, "missing: a link joins two endpoints a and b ({device: ..., port: ...})")
			continue
		}
		ef := p.fields(kv[1], path+"."+end, []string{"device", "port"})
		e := Endpoint{Device: p.str(ef["device"], path+"."+end+".device"), Port: p.str(ef["port"], path+"."+end+".port")}
		if end == "a" {
			l.A = e
		} else {
			l.B = e
		}
	}
	l.Transceiver = p.str(f["transceiver"], path+".transceiver")
	l.FEC = p.str(f["fec"], path+".fec")
	if kv, ok := f["voa"]; ok {
		vf := p.fields(kv[1], path+".voa", []string{"device", "channel"})
		l.VOA = &VOARef{Device: p.str(vf["device"], path+".voa.device"), Channel: 1}
		if x, ok := vf["channel"]; ok {
			p.decode(x, path+".voa.channel", &l.VOA.Channel, "an integer")
			l.FieldPos["voa.channel"] = p.at(x[1])
		}
	}
	if kv, ok := f["loss_after_voa_db"]; ok {
		p.decode(kv, path+".loss_after_voa_db", &l.LossAfterVOADB, "a number in dB")
		l.lossAfterGiven = true
	}
	if kv, ok := f["options"]; ok {
		p.decode(kv, path+".options", &l.Options, "a map of strings")
		if kv[1].Kind == yaml.MappingNode {
			for i := 0; i+1 < len(kv[1].Content); i += 2 {
				l.FieldPos["options."+kv[1].Content[i].Value] = p.at(kv[1].Content[i])
			}
		}
	}
	return l
}

// linkOptions reads a link's optical budget from its options and says
// what is wrong with them.
func (inv *Inventory) linkOptions(l *Link, path string, add problemAdder) {
	for _, k := range sortedMapKeys(l.Options) {
		v := strings.TrimSpace(l.Options[k])
		field, fpath := "options."+k, path+".options."+k
		if !slices.Contains(linkOptions, k) {
			add(l.FieldPos, field, l.Pos, fpath, "unknown link option %q (known: %s)", k, strings.Join(linkOptions, ", "))
			continue
		}
		if k == "fibre_type" {
			if _, ok := FibreTypes()[v]; !ok {
				add(l.FieldPos, field, l.Pos, fpath, "fibre type %q is not one of OM3, OM4, OS2", v)
				continue
			}
			l.FibreType = v
			continue
		}
		if k == "data_path" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				add(l.FieldPos, field, l.Pos, fpath, "expected true or false, got %q", l.Options[k])
				continue
			}
			l.DataPath = b
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			unit := "dB"
			if k == "fibre_length_m" {
				unit = "metres"
			}
			add(l.FieldPos, field, l.Pos, fpath, "expected a number of %s, not negative, got %q", unit, l.Options[k])
			continue
		}
		switch k {
		case "fibre_length_m":
			l.FibreLengthM = x
		case "loss_before_voa_db":
			l.LossBeforeVOADB = &x
		case "loss_after_voa_db":
			if l.lossAfterGiven && l.LossAfterVOADB != x {
				add(l.FieldPos, field, l.Pos, fpath, "loss after the VOA given twice (%s and loss_after_voa_db: %g); give it once", v, l.LossAfterVOADB)
				continue
			}
			l.LossAfterVOADB, l.lossAfterGiven = x, true
		}
	}
	if l.FibreType != "" && l.FibreLengthM == 0 {
		add(l.FieldPos, "options.fibre_type", l.Pos, path+".options.fibre_type", "fibre_type without fibre_length_m: give the fibre's length in metres")
	}
	if t, ok := LookupTransceiver(l.Transceiver); ok && l.FibreType != "" && t.Multimode != FibreTypes()[l.FibreType].Multimode {
		mode := map[bool]string{true: "multimode (OM3, OM4)", false: "single-mode (OS2)"}
		add(l.FieldPos, "options.fibre_type", l.Pos, path+".options.fibre_type", "%s runs on %s fibre, not %s", t.Name, mode[t.Multimode], l.FibreType)
	}
}

// schemesFor says which address schemes fit a kind of device.
func schemesFor(kind string) []string {
	switch kind {
	case "voa":
		return []string{"tcp", "serial"}
	case "trafficgen":
		return []string{"http", "https", "tcp"} // tcp: TRex's ZeroMQ RPC port
	case "switch":
		// ssh for the bfrt_python agent's driver, tcp for BF Runtime gRPC.
		return []string{"ssh", "tcp"}
	case "host":
		return []string{"ssh"}
	case "ocs":
		return []string{"http", "https", "tcp", "serial"}
	case "fabric":
		return []string{"tcp"} // a fabric's line protocol (dut/fabric)
	}
	return nil
}

// checkAddress validates an address's syntax.
func checkAddress(raw string) (scheme string, err error) {
	u, err := url.Parse(raw)
	shown := RedactAddress(raw)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", fmt.Errorf("%q is not a URL: %v", shown, err)
	}
	switch u.Scheme {
	case "tcp":
		if u.Hostname() == "" || u.Port() == "" {
			return "", fmt.Errorf("%q: expected tcp://host:port", shown)
		}
	case "ssh":
		if u.Hostname() == "" {
			return "", fmt.Errorf("%q: expected ssh://user@host[:port]", shown)
		}
	case "http", "https":
		if u.Host == "" {
			return "", fmt.Errorf("%q: expected %s://host[:port][/path]", shown, u.Scheme)
		}
	case "serial":
		if u.Host != "" || !strings.HasPrefix(u.Path, "/") {
			return "", fmt.Errorf("%q: expected serial:///dev/<port>?baud=<rate> (three slashes)", shown)
		}
		if b := u.Query().Get("baud"); b != "" {
			if n, err := strconv.Atoi(b); err != nil || n <= 0 {
				return "", fmt.Errorf("%q: baud %q is not a positive integer", shown, b)
			}
		}
	default:
		return "", fmt.Errorf("%q: unknown scheme %q (expected tcp, serial, http, https or ssh)", shown, u.Scheme)
	}
	return u.Scheme, nil
}

// problemAdder records a problem at a field's position (fallback when
// the field has none), under its path in the inventory.
type problemAdder func(fp map[string]Pos, field string, fallback Pos, path, format string, args ...any)

// Validate checks the inventory's consistency: kinds, addresses, limits,
// and that links refer to devices, ports and channels that exist.
func (inv *Inventory) Validate() error {
	var ps []Problem
	add := func(fp map[string]Pos, field string, fallback Pos, path, format string, args ...any) {
		ps = append(ps, Problem{Pos: inv.pos(fp, field, fallback), Field: path, Msg: fmt.Sprintf(format, args...)})
	}
	for _, name := range inv.DeviceNames() {
		validateDevice(name, inv.Devices[name], add)
	}
	seen := map[string]bool{}
	for i, l := range inv.Links {
		path := fmt.Sprintf("links[%d]", i)
		if l.Name == "" {
			add(l.FieldPos, "name", l.Pos, path+".name", "missing: every link has a name")
		} else if seen[l.Name] {
			add(l.FieldPos, "name", l.Pos, path+".name", "link %q is defined twice", l.Name)
		}
		seen[l.Name] = true
		inv.validateLink(l, path, add)
		inv.linkOptions(l, path, add)
	}
	inv.validateDataPaths(add)
	if len(ps) > 0 {
		return &ValidationError{Problems: ps}
	}
	return nil
}

// validateDevice checks the device of that name: its kind, driver, address (and that
// its kind is reached over its scheme), options free of secrets, a
// host's ports, channels, limits and safe state.
func validateDevice(name string, d *Device, add problemAdder) {
	path := "devices." + name
	if !slices.Contains(Kinds(), d.Kind) {
		add(d.FieldPos, "kind", d.Pos, path+".kind", "kind %q is not one of %s", d.Kind, strings.Join(Kinds(), ", "))
	}
	if d.Driver == "" {
		add(d.FieldPos, "driver", d.Pos, path+".driver", "missing: which driver speaks to this device")
	}
	if msg := deviceAddressProblem(d); msg != "" {
		add(d.FieldPos, "address", d.Pos, path+".address", "%s", msg)
	}
	for _, k := range sortedMapKeys(d.Options) {
		if msg := optionSecretProblem(k, d.Options[k]); msg != "" {
			add(d.FieldPos, "options."+k, d.Pos, path+".options."+k, "%s", msg)
		}
	}
	if d.Kind == "host" {
		// A host's ports are its data-plane interfaces: name -> the
		// interface's address with its prefix length.
		for _, port := range sortedMapKeys(d.Ports) {
			if _, err := netip.ParsePrefix(d.Ports[port]); err != nil {
				add(d.FieldPos, "ports", d.Pos, path+".ports."+port, "%q: a host's port is its interface's address with prefix length (e.g. 10.0.0.1/24)", d.Ports[port])
			}
		}
	}
	if d.Channels < 0 {
		add(d.FieldPos, "channels", d.Pos, path+".channels", "must be at least 1")
	}
	if d.Limits != nil {
		if d.Limits.MinDB < 0 || d.Limits.MinDB >= d.Limits.MaxDB {
			add(d.FieldPos, "limits", d.Pos, path+".limits", "need 0 <= min_db < max_db, got [%g, %g]", d.Limits.MinDB, d.Limits.MaxDB)
		}
	}
	if d.SafeState != nil && d.SafeState.AttenuationDB != nil && d.Limits != nil {
		if a := *d.SafeState.AttenuationDB; a < d.Limits.MinDB || a > d.Limits.MaxDB {
			add(d.FieldPos, "safe_state.attenuation_db", d.Pos, path+".safe_state.attenuation_db", "%g dB is outside the limits [%g, %g] dB", a, d.Limits.MinDB, d.Limits.MaxDB)
		}
	}
}

// deviceAddressProblem is what is wrong with a device's address, or "":
// missing, holding a secret, malformed, or of a scheme its kind is not
// reached over.
func deviceAddressProblem(d *Device) string {
	if d.Address == "" {
		return "missing: where to reach the device"
	}
	if msg := addressSecretProblem(d.Address); msg != "" {
		return msg
	}
	scheme, err := checkAddress(d.Address)
	if err != nil {
		return err.Error()
	}
	if ok := schemesFor(d.Kind); ok != nil && !slices.Contains(ok, scheme) {
		return fmt.Sprintf("a %s is not reached over %s (expected %s)", d.Kind, scheme, strings.Join(ok, " or "))
	}
	return ""
}

// validateLink checks a link's ends, its transceiver and FEC (filling in
// the transceiver's default FEC), its VOA and the loss after it.
func (inv *Inventory) validateLink(l *Link, path string, add problemAdder) {
	for _, e := range []struct {
		tag string
		ep  Endpoint
	}{{"a", l.A}, {"b", l.B}} {
		inv.validateEndpoint(l, path, e.tag, e.ep, add)
	}
	t, ok := LookupTransceiver(l.Transceiver)
	if !ok {
		var names []string
		for _, x := range Transceivers() {
			names = append(names, x.Name)
		}
		add(l.FieldPos, "transceiver", l.Pos, path+".transceiver", "unknown transceiver %q (known: %s)", l.Transceiver, strings.Join(names, ", "))
	} else {
		if l.FEC == "" {
			l.FEC = t.DefaultFEC
		}
		if !slices.Contains(t.FECs, l.FEC) {
			add(l.FieldPos, "fec", l.Pos, path+".fec", "fec %q is not available on %s (expected %s)", l.FEC, t.Name, strings.Join(t.FECs, " or "))
		}
	}
	if l.VOA != nil {
		d, ok := inv.Devices[l.VOA.Device]
		switch {
		case !ok:
			add(l.FieldPos, "voa", l.Pos, path+".voa.device", "no device %q in this inventory", l.VOA.Device)
		case d.Kind != "voa":
			add(l.FieldPos, "voa", l.Pos, path+".voa.device", "device %s is a %s, not a voa", d.Name, d.Kind)
		case l.VOA.Channel < 1 || (d.Channels > 0 && l.VOA.Channel > d.Channels):
			add(l.FieldPos, "voa.channel", l.Pos, path+".voa.channel", "channel %d does not exist on %s (channels 1..%d)", l.VOA.Channel, d.Name, max(d.Channels, 1))
		}
	}
	if l.LossAfterVOADB < 0 {
		add(l.FieldPos, "loss_after_voa_db", l.Pos, path+".loss_after_voa_db", "must not be negative")
	}
}

// validateEndpoint checks one end of a link (tag a or b): a device of
// the inventory, one of its ports when it lists them, and a port number
// from 1 on an optical circuit switch.
func (inv *Inventory) validateEndpoint(l *Link, path, tag string, ep Endpoint, add problemAdder) {
	d, ok := inv.Devices[ep.Device]
	switch {
	case ep.Device == "":
		add(l.FieldPos, tag, l.Pos, path+"."+tag+".device", "missing")
	case !ok:
		add(l.FieldPos, tag, l.Pos, path+"."+tag+".device", "no device %q in this inventory", ep.Device)
	case len(d.Ports) > 0 && d.Ports[ep.Port] == "":
		add(l.FieldPos, tag, l.Pos, path+"."+tag+".port", "device %s has no port %q (ports: %s)", d.Name, ep.Port, strings.Join(sortedMapKeys(d.Ports), ", "))
	case d.Kind == "ocs":
		// An optical circuit switch's ports are numbered from 1;
		// a link to one names the port (input and output) by number.
		if n, err := strconv.Atoi(ep.Port); err != nil || n < 1 {
			add(l.FieldPos, tag, l.Pos, path+"."+tag+".port", "port %q of %s: an ocs port is a number from 1", ep.Port, d.Name)
		}
	}
}

// validateDataPaths checks that at most one link a direction between two
// devices is marked as their data path.
func (inv *Inventory) validateDataPaths(add problemAdder) {
	dataPath := map[[2]string]string{} // a -> b devices: the link marked data_path
	for i, l := range inv.Links {
		if !l.DataPath {
			continue
		}
		k := [2]string{l.A.Device, l.B.Device}
		if other, ok := dataPath[k]; ok {
			add(l.FieldPos, "options.data_path", l.Pos, fmt.Sprintf("links[%d].options.data_path", i), "link %s is already the data path from %s to %s; mark one link per direction", other, k[0], k[1])
			continue
		}
		dataPath[k] = l.Name
	}
}

func sortedMapKeys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
