package monitor

import (
	"context"
	"fmt"
	"slices"

	"testbed/dut/p4switch"
	"testbed/hostagent"
	"testbed/inventory"
)

// HostCounterReader reads a host's NIC counters through its hostagent
// (/proc/net/dev, as GET /v1/counters serves them); *hostagent.Client is
// one.
type HostCounterReader interface {
	Counters(ctx context.Context, ifaces ...string) (hostagent.Counters, error)
}

// The /proc/net/dev columns a host end is estimated from: packets sent,
// packets received good, and receive errors (the NIC's CRC and framing
// errors, the kernel's rx_errors).
const (
	HostTx     = "tx_packets"
	HostRx     = "rx_packets"
	HostRxErrs = "rx_errs"
)

// FECReader reads a switch port's FEC codeword counters since the port
// came up (IEEE 802.3 clause 91.6: FEC_corrected_cw_counter,
// FEC_uncorrected_cw_counter); the Tofino driver's FECCounters is one. A
// switch driver that has no such method (or a port that reports none)
// leaves a direction's FEC counters unavailable; the monitor says so and
// judges on frames alone.
type FECReader interface {
	FECCounters(ctx context.Context, devPort int) (p4switch.FECCounters, error)
}

// FECStatus is what the monitor knows of a direction's FEC at the
// receiving port.
type FECStatus struct {
	Available bool   `json:"available"`
	Mode      string `json:"mode,omitempty"` // the inventory's fec of the link
	// Corrected and Uncorrected are counted since the monitor's first
	// read; LastCorrected and LastUncorrected over the last poll.
	Corrected       int64  `json:"corrected_codewords"`
	Uncorrected     int64  `json:"uncorrectable_codewords"`
	LastCorrected   int64  `json:"last_corrected_codewords"`
	LastUncorrected int64  `json:"last_uncorrectable_codewords"`
	Reason          string `json:"reason,omitempty"` // why unavailable
}

// fecStrength orders FEC modes by the errors they correct: none; BASE-R
// (FC-FEC, clause 74, one burst of 11 bits per 2112-bit block);
// RS(528,514) (clause 91, 7 symbols per codeword); RS(544,514) (clause
// 134, 15 symbols). The FEC paper's §4.5 (Fig. 11) has the receiver ask
// for a stronger code when the link degrades.
var fecStrength = []string{"none", "fc", "rs528", "rs544"}

// StrongerFEC is the next stronger FEC mode than mode that the link's
// transceiver supports ("" when none).
func StrongerFEC(transceiver, mode string) string {
	i := slices.Index(fecStrength, mode)
	if i < 0 {
		return ""
	}
	t, ok := inventory.LookupTransceiver(transceiver)
	for _, m := range fecStrength[i+1:] {
		if !ok || slices.Contains(t.FECs, m) {
			return m
		}
	}
	return ""
}

// ActProposeFEC proposes a stronger FEC mode on a link: a proposal only,
// for an operator (changing FEC takes the link down while the port is
// re-added, and costs latency: the FEC paper's Table 1).
const ActProposeFEC Action = "fec_stronger_proposed"

// fecRule is the rule of the stronger-FEC proposal: the decoder met
// codewords it could not correct during the last poll.
func fecRule(f FECStatus, next string) string {
	return fmt.Sprintf("FEC paper §4.5 (Fig. 11): the receiver's %s decoder met %d uncorrectable codewords (%d corrected) in the last poll; %s corrects more at a latency cost",
		f.Mode, f.LastUncorrected, f.LastCorrected, next)
}

// DecideFEC proposes a stronger FEC once per corrupting episode of a
// direction whose receiver reports uncorrectable codewords.
func (p *Policy) DecideFEC(d Dir, st Status, f FECStatus, transceiver string) []Decision {
	if st.State != Corrupting {
		if st.State == Clean {
			delete(p.fecProposed, d)
		}
		return nil
	}
	if !f.Available || f.LastUncorrected == 0 || p.fecProposed[d] {
		return nil
	}
	next := StrongerFEC(transceiver, f.Mode)
	if next == "" {
		return nil
	}
	p.fecProposed[d] = true
	ev := p.evidence(st)
	ev.FEC = &f
	return []Decision{{At: st.At, Link: d.Link, Direction: d.Direction, Sender: d.Sender, Action: ActProposeFEC,
		Rule: fecRule(f, next), Evidence: ev, FECMode: next}}
}
