package simlab

import (
	"fmt"
	"testbed/internal/readfile"

	"testbed/simlab/scenario"
)

// ApplyScenario puts a scenario's impairments on the lab's fibres: from
// then on each impaired fibre's received power (and its transmitter's DDM
// Tx power) follows the scenario at the switches' clock, and the frames
// it loses follow from that power through the optics model. A link that
// is not a fibre between two of the lab's switches is an error naming the
// scenario's file and line.
func (l *Lab) ApplyScenario(s *scenario.Scenario) error {
	// The impairments follow the switches' clock, so they apply to the
	// fibres between two simulated switches (what the switches' traffic
	// and the hosts' traffic over them cross).
	var known []string
	for _, lk := range l.inv.Links {
		if l.switches[lk.A.Device] == nil || l.switches[lk.B.Device] == nil {
			continue
		}
		if _, ok := l.world.Fibre(lk.Name); ok {
			known = append(known, lk.Name)
		}
	}
	if err := s.CheckLinks(known); err != nil {
		return err
	}
	for _, name := range s.Links() {
		f, _ := l.world.Fibre(name)
		f.SetImpairment(s.Impairment(name))
	}
	return nil
}

// LoadScenario reads a scenario file (at most 1 MiB, a regular file).
func LoadScenario(path string) (*scenario.Scenario, error) {
	b, err := readfile.Read(path, 1<<20)
	if err != nil {
		return nil, fmt.Errorf("scenario: %w", err)
	}
	return scenario.Parse(path, b)
}
