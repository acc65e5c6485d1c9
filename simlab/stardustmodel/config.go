// Package stardustmodel is a cell-level, slotted discrete-event model of a
// two-tier Stardust fabric (Zilberman et al., "Stardust: Divide and Conquer
// in the Data Center Network", NSDI'19): Fabric Adapters (FA) with virtual
// output queues per destination port and priority, an egress credit
// scheduler per destination port, packing of a VOQ's packets into cells,
// spraying of cells over links by a random permutation refreshed every few
// rounds, Fabric Elements (FE) with shallow output queues that mark
// congestion (FCI), and link propagation delay.
//
// Time advances in slots of one "fabric cell time" (§4.2.1): the time a
// full cell, its header and the link's per-cell overhead take on one fabric
// link. A fabric link carries at most one cell per slot; a cell shorter than
// a full cell (the tail of a credit's worth) still takes a slot, as the FE
// data path is clocked per cell (§4.2).
//
// The fabric has one FE stage (FA-FE-FA) or two (FA-FE1-FE2-FE1-FA, the
// folded Clos of §6.2, where the first-tier FE serves as first and last
// stage). Reachability cells every ReachPeriodSlots on every link build
// every device's forwarding table (§3.2, §5.8); a link is taken out after
// ReachTh missed cells and put back after ReachTh good ones (§5.9, App. E);
// links and FEs can be failed and restored (reach.go).
//
// What the fabric does emerges from these mechanisms; no result of the
// paper is a parameter. Not modelled: VOQ request messages (a VOQ's request
// reaches its scheduler at once; credits travel the control path with the
// fabric's delay), loss-of-signal detection (a dead link is found only by
// missed reachability cells, the slower path of §5.9), corrupting links
// other than FA-FE ones (errors.go), packet reassembly timers. flows.go
// adds flows of a given size; packet.go the packet-switched fabric the
// paper compares Stardust with.
//
// The model is single-goroutine and deterministic for a given seed.
package stardustmodel

import sd "testbed/p4/stardust"

// The fabric's configuration, statistics and packet-fabric options are the
// Stardust contract's (p4/stardust/fabric.go), which the recipes use too.
type (
	Config     = sd.Fabric
	Stats      = sd.FabricStats
	PacketOpts = sd.PacketFabricOpts
)

// The FCI reactions (Config.FCIReaction).
const (
	FCICut          = sd.FCICut
	FCIProportional = sd.FCIProportional
)

// Default is a small fabric with the paper's per-link parameters
// (sd.DefaultFabric).
func Default() Config { return sd.DefaultFabric() }

// Paper is §6.2's two-tier fabric (sd.PaperFabric).
func Paper() Config { return sd.PaperFabric() }
