package simlab

import (
	"testbed/simlab/ocs"
)

// The default bench's optical circuit switches: ocs1, a Mordia-style
// microsecond switch on REST, and ocs2, a Polatis-style millisecond switch
// on SCPI over TCP. Their behaviour is described by their inventory
// entries (options), and a twin builds the emulators from those entries
// (twin_ocs.go).
const (
	ocsMicroName = "ocs1"
	ocsMilliName = "ocs2"
)

// ocsLab is the lab's switches and their front-ends, by device name.
type ocsLab struct {
	micro   map[string]*ocs.MicroOCS
	mordia  map[string]*ocs.MordiaServer
	milli   map[string]*ocs.PolatisSwitch
	polatis map[string]*ocs.PolatisServer
}

// ocs.MicroOCS returns a simulated microsecond switch by name ("ocs1"), or nil.
func (l *Lab) MicroOCS(name string) *ocs.MicroOCS {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.micro[name]
}

// ocs.MordiaServer returns the REST front-end of a microsecond switch, or nil.
func (l *Lab) MordiaServer(name string) *ocs.MordiaServer {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.mordia[name]
}

// ocs.PolatisSwitch returns a simulated millisecond switch by name ("ocs2"), or nil.
func (l *Lab) PolatisSwitch(name string) *ocs.PolatisSwitch {
	if l.ocs == nil {
		return nil
	}
	return l.ocs.milli[name]
}
