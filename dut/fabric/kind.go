package fabric

import (
	"context"

	sd "testbed/p4/stardust"
)

// Fabric is a fabric device as a recipe uses it: it runs one fabric at a
// time (a Stardust fabric of cells, or the packet-switched fabric of the
// same shape), made by OpenCells or OpenPackets, offered flows, stepped
// and read.
type Fabric interface {
	OpenCells(ctx context.Context, f sd.Fabric, seed Seed) error
	OpenPackets(ctx context.Context, f sd.Fabric, o sd.PacketFabricOpts, seed Seed) error
	AddFlow(ctx context.Context, f Flow) (int, error)
	Run(ctx context.Context, slots int64) (int64, error)
	RunUntilDone(ctx context.Context, until, step int64) (now int64, done bool, err error)
	Flows(ctx context.Context) ([]FlowState, error)
	Stats(ctx context.Context) (sd.FabricStats, error)
	PacketStats(ctx context.Context) (PacketCounters, error)
}

// Faults are a cell fabric's failures and what its FAs know of them: a
// link or FE failed and restored, a link made to corrupt cells, and the
// state of the links and reachability tables watched slot by slot.
type Faults interface {
	SetLink(ctx context.Context, link int, up bool) error
	SetFE(ctx context.Context, tier, fe int, up bool) error
	SetLinkErrorRate(ctx context.Context, link int, rate, threshold float64) error
	FALink(ctx context.Context, fa, j, dst int) (FALink, error)
	Watch(ctx context.Context, w WatchSpec) (Trace, error)
}

// Reach names a reachability entry: whether FA FA's table lets it send
// cells for FA Dst on its link J.
type Reach struct {
	FA  int `json:"fa"`
	J   int `json:"j"`
	Dst int `json:"dst"`
}

// WatchSpec is a watch: Slots slots stepped one at a time, the validity
// of Links and the entries Reach followed, and a sample taken at every
// slot a whole number of Bin slots after Origin.
type WatchSpec struct {
	Slots  int64   `json:"slots"`
	Origin int64   `json:"origin"`
	Bin    int64   `json:"bin"`
	Links  []int   `json:"links"`
	Reach  []Reach `json:"reach"`
}

// WatchState is the watched state after slot Slot: Valid[i] for
// Links[i], Reach[i] for Reach[i], and Lost, the cells a failure lost so
// far (on a dead link or FE, with no route, or corrupted).
type WatchState struct {
	Slot  int64
	Valid []bool
	Reach []bool
	Lost  int64
}

// Bin is a sample at a bin's end: the packet bytes that have reached
// their destination FA, and the failure-lost cells, after slot Slot.
type Bin struct {
	Slot         int64
	BytesArrived int64 `json:"bytes_arrived"`
	Lost         int64
}

// Trace is a watch's answer: the state before it, the state after each
// slot in which it changed (in slot order), the bins' samples, and the
// slot reached.
type Trace struct {
	Now     int64
	Start   WatchState
	Changes []WatchState
	Bins    []Bin
}

// StateAt is the watched state after slot: the last change at or before
// it, or the state before the watch.
func (t Trace) StateAt(slot int64) WatchState {
	s := t.Start
	for _, c := range t.Changes {
		if c.Slot > slot {
			break
		}
		s = c
	}
	return s
}

var (
	_ Fabric = (*Conn)(nil)
	_ Faults = (*Conn)(nil)
)
