// Package scenario makes corruption come and go on a simulated lab's
// optics, driven by the lab clock: an attenuator that drifts, a connector
// that gets dirty at a given time, a transceiver whose launch power
// falls. A scenario states optical causes only (dB, dB per hour, times);
// what they do to frames comes out of the physics package's optics-to-loss
// model (received power, BER, FEC, frame loss), never from a stated loss
// rate.
//
// It is a pure model: no goroutines, no I/O beyond parsing the bytes it is
// given.
package scenario

import (
	"bytes"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Kinds of impairment.
const (
	// VOADrift: the attenuator's actual attenuation creeps away from its
	// setting (stepper slip, temperature), at DBPerHour from Start; its
	// readback still reports the setting. Optional MaxDB caps the drift.
	VOADrift = "voa_drift"
	// DirtyConnector: a connector between the attenuator and the receiver
	// gets contaminated at Start: StepDB more insertion loss (a dirty LC
	// end face adds from tenths of a dB to several dB; IEC 61300-3-35
	// grades end faces by it), until CleanAt if given.
	DirtyConnector = "dirty_connector"
	// TxDegrade: the transmitter's launch power falls at DBPerHour from
	// Start (laser ageing: bias current rises, then slope efficiency
	// falls; the module's DDM reports the falling Tx power). Optional MaxDB
	// caps the fall.
	TxDegrade = "tx_degrade"
)

// Resolution is the step in which a changing impairment moves: the
// optics change in hundredths of a dB (the resolution of a VOA's setting
// and of a module's power monitor), so a model of traffic over the link
// sees piecewise-constant optics.
const Resolution = 0.01

// Impairment is one cause on one link's fibre.
type Impairment struct {
	Kind      string        `yaml:"kind"`
	Link      string        `yaml:"link"`
	Start     time.Duration `yaml:"start"`
	DBPerHour float64       `yaml:"db_per_hour,omitempty"`
	MaxDB     float64       `yaml:"max_db,omitempty"`
	StepDB    float64       `yaml:"step_db,omitempty"`
	CleanAt   time.Duration `yaml:"clean_at,omitempty"`

	line int
}

// Scenario is a named set of impairments.
type Scenario struct {
	Name        string       `yaml:"name"`
	Description string       `yaml:"description,omitempty"`
	Impairments []Impairment `yaml:"impairments"`

	path string
}

// Path is the file the scenario came from ("" when built in Go).
func (s *Scenario) Path() string { return s.path }

type fileImpairment struct {
	Kind      string  `yaml:"kind"`
	Link      string  `yaml:"link"`
	Start     string  `yaml:"start"`
	DBPerHour float64 `yaml:"db_per_hour"`
	MaxDB     float64 `yaml:"max_db"`
	StepDB    float64 `yaml:"step_db"`
	CleanAt   string  `yaml:"clean_at"`
}

// Parse reads a scenario file's bytes; path names it in errors, which give
// the line of the impairment at fault.
func Parse(path string, b []byte) (*Scenario, error) {
	var doc struct {
		Name        string      `yaml:"name"`
		Description string      `yaml:"description"`
		Impairments []yaml.Node `yaml:"impairments"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	s := &Scenario{Name: doc.Name, Description: doc.Description, path: path}
	for _, n := range doc.Impairments {
		var fi fileImpairment
		if err := n.Decode(&fi); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n.Line, err)
		}
		im := Impairment{Kind: fi.Kind, Link: fi.Link, DBPerHour: fi.DBPerHour, MaxDB: fi.MaxDB, StepDB: fi.StepDB, line: n.Line}
		var err error
		if im.Start, err = duration(fi.Start); err != nil {
			return nil, fmt.Errorf("%s:%d: start: %w", path, n.Line, err)
		}
		if im.CleanAt, err = duration(fi.CleanAt); err != nil {
			return nil, fmt.Errorf("%s:%d: clean_at: %w", path, n.Line, err)
		}
		s.Impairments = append(s.Impairments, im)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

func duration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q: expected a duration of the lab clock such as 90s or 2h", s)
	}
	return d, nil
}

// where names an impairment in errors: file and line when parsed, else
// its index.
func (s *Scenario) where(i int) string {
	if s.path != "" && s.Impairments[i].line > 0 {
		return fmt.Sprintf("%s:%d", s.path, s.Impairments[i].line)
	}
	name := s.Name
	if name == "" {
		name = "scenario"
	}
	return fmt.Sprintf("%s: impairment %d", name, i+1)
}

// Validate checks every impairment's fields for its kind.
func (s *Scenario) Validate() error {
	if len(s.Impairments) == 0 {
		return fmt.Errorf("%s: no impairments", s.whereAll())
	}
	for i, im := range s.Impairments {
		w := s.where(i)
		if im.Link == "" {
			return fmt.Errorf("%s: %s: no link: expected the inventory name of the link whose fibre it impairs", w, im.Kind)
		}
		if im.Start < 0 || im.CleanAt < 0 {
			return fmt.Errorf("%s: negative time", w)
		}
		finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
		if !finite(im.DBPerHour) || !finite(im.MaxDB) || !finite(im.StepDB) {
			return fmt.Errorf("%s: values must be finite numbers", w)
		}
		switch im.Kind {
		case VOADrift, TxDegrade:
			if im.DBPerHour <= 0 {
				return fmt.Errorf("%s: %s needs db_per_hour > 0 (dB of extra loss per hour of the lab clock), got %g", w, im.Kind, im.DBPerHour)
			}
			if im.MaxDB < 0 || im.StepDB != 0 || im.CleanAt != 0 {
				return fmt.Errorf("%s: %s takes db_per_hour and max_db (>= 0) only", w, im.Kind)
			}
		case DirtyConnector:
			if im.StepDB <= 0 {
				return fmt.Errorf("%s: dirty_connector needs step_db > 0 (extra insertion loss, dB), got %g", w, im.StepDB)
			}
			if im.DBPerHour != 0 || im.MaxDB != 0 {
				return fmt.Errorf("%s: dirty_connector takes step_db and clean_at only", w)
			}
			if im.CleanAt != 0 && im.CleanAt <= im.Start {
				return fmt.Errorf("%s: clean_at %s not after start %s", w, im.CleanAt, im.Start)
			}
		default:
			return fmt.Errorf("%s: kind %q: expected %s, %s or %s", w, im.Kind, VOADrift, DirtyConnector, TxDegrade)
		}
	}
	return nil
}

func (s *Scenario) whereAll() string {
	if s.path != "" {
		return s.path
	}
	if s.Name != "" {
		return "scenario " + s.Name
	}
	return "scenario"
}

// CheckLinks reports impairments on links not among known (the lab's
// fibres), naming the file and line.
func (s *Scenario) CheckLinks(known []string) error {
	set := map[string]bool{}
	for _, k := range known {
		set[k] = true
	}
	for i, im := range s.Impairments {
		if !set[im.Link] {
			sorted := append([]string(nil), known...)
			sort.Strings(sorted)
			return fmt.Errorf("%s: link %q is not a fibre between two switches of this lab (expected one of: %s)", s.where(i), im.Link, strings.Join(sorted, ", "))
		}
	}
	return nil
}

// Links lists the links the scenario impairs, sorted, once each.
func (s *Scenario) Links() []string {
	seen := map[string]bool{}
	var out []string
	for _, im := range s.Impairments {
		if !seen[im.Link] {
			seen[im.Link] = true
			out = append(out, im.Link)
		}
	}
	sort.Strings(out)
	return out
}

// Optics is what a link's impairments do at one instant, in dB: how far
// the transmitter's launch power has fallen, and the extra loss on the
// path (attenuator drift, dirty connectors).
type Optics struct {
	TxDropDB, PathLossDB float64
}

// At is the optics of link at lab time t, each term in steps of
// Resolution.
func (s *Scenario) At(link string, t time.Duration) Optics {
	var o Optics
	for _, im := range s.Impairments {
		if im.Link != link || t < im.Start {
			continue
		}
		switch im.Kind {
		case VOADrift:
			o.PathLossDB += ramp(im, t)
		case TxDegrade:
			o.TxDropDB += ramp(im, t)
		case DirtyConnector:
			if im.CleanAt == 0 || t < im.CleanAt {
				o.PathLossDB += im.StepDB
			}
		}
	}
	o.TxDropDB = quantize(o.TxDropDB)
	o.PathLossDB = quantize(o.PathLossDB)
	return o
}

// ramp is a drift's dB at t: linear in the lab clock from Start, capped.
func ramp(im Impairment, t time.Duration) float64 {
	db := im.DBPerHour * (t - im.Start).Hours()
	if im.MaxDB > 0 && db > im.MaxDB {
		db = im.MaxDB
	}
	return db
}

func quantize(db float64) float64 { return math.Floor(db/Resolution+1e-9) * Resolution }

// Impairment returns the link's optics as a function of the lab clock,
// for world.Fibre.SetImpairment.
func (s *Scenario) Impairment(link string) func(t time.Duration) (txDropDB, pathLossDB float64) {
	return func(t time.Duration) (float64, float64) {
		o := s.At(link, t)
		return o.TxDropDB, o.PathLossDB
	}
}
