package host

import (
	"testbed/simlab/lgmodel"
	"testbed/simlab/physics"
)

// Path is what host traffic sees on a switch fibre at one moment: whether
// it is up, the LinkGuardian mode and copies the switches at its ends are
// configured with, the receiver's backpressure thresholds, the optics, and
// the drop fraction of the sender's loss-emulation table. The simulated
// lab reads it from the simulated switches' dataplane.
type Path struct {
	Up            bool
	Mode          lgmodel.Mode
	Copies        int
	Pause, Resume int // the receiver's backpressure thresholds, cells
	Bps           float64
	FEC           string
	RxDBm         float64 // received power
	Drop          float64 // the sender's loss-emulation table's drop fraction
	Transceiver   physics.Transceiver
}

// Paths reads a switch fibre's Path now, by the fibre's name.
type Paths func(fibre string) (Path, error)
