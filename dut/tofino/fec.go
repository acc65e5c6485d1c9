package tofino

import (
	"context"
	"fmt"
	"time"
)

// FECCounters is one read of a port's forward error correction counters,
// as Tofino's port manager keeps them (bf_port_rs_fec_status_and_counters_get
// in the SDE's bf_port API: hi_ser, fec_align_status, fec_corr_cnt,
// fec_uncorr_cnt, fec_ser_lane_0..3). Counts run from when the port was
// added or its mode last changed; compare two reads for a rate.
type FECCounters struct {
	// Time is the switch's clock at the read.
	Time time.Duration
	// Corrected counts codewords that had errors the decoder corrected;
	// Uncorrected those it could not (their frames reach the MAC with a bad
	// FCS: $FramesReceivedwithFCSError counts them again).
	Corrected, Uncorrected int64
	// SymbolErrors are the symbol errors the decoder found, per lane of
	// the port (RS-FEC: 10-bit symbols; FC-FEC: corrected blocks).
	SymbolErrors [4]int64
	// Aligned says the FEC has codeword lock on all lanes; HighSER that the
	// symbol error rate is above the code's bypass threshold (802.3 clause
	// 91.5.3.3).
	Aligned, HighSER bool
}

// FECCounters reads the FEC counters of an added port (see FECCounters).
// A port without FEC reads zeros and Aligned false.
func (s *Switch) FECCounters(ctx context.Context, devPort int) (FECCounters, error) {
	var r struct {
		TimeNs int64 `json:"time_ns"`
		HiSER  bool  `json:"hi_ser"`
		Align  bool  `json:"fec_align_status"`
		Corr   int64 `json:"fec_corr_cnt"`
		Uncorr int64 `json:"fec_uncorr_cnt"`
		Lane0  int64 `json:"fec_ser_lane_0"`
		Lane1  int64 `json:"fec_ser_lane_1"`
		Lane2  int64 `json:"fec_ser_lane_2"`
		Lane3  int64 `json:"fec_ser_lane_3"`
	}
	if err := s.agent.call(ctx, "port.fec_stat", map[string]any{"dev_port": devPort}, &r); err != nil {
		return FECCounters{}, fmt.Errorf("port %d FEC counters: %w", devPort, err)
	}
	return FECCounters{Time: time.Duration(r.TimeNs), Corrected: r.Corr, Uncorrected: r.Uncorr,
		SymbolErrors: [4]int64{r.Lane0, r.Lane1, r.Lane2, r.Lane3}, Aligned: r.Align, HighSER: r.HiSER}, nil
}

// SetCutThrough enables or disables cut-through forwarding towards an
// egress port in the traffic manager (store-and-forward when disabled) and
// returns the setting it found, for the caller's undo.
func (s *Switch) SetCutThrough(ctx context.Context, devPort int, enable bool) (bool, error) {
	var r struct {
		Previous bool `json:"previous"`
	}
	if err := s.agent.call(ctx, "port.cut_through", map[string]any{"dev_port": devPort, "enable": enable}, &r); err != nil {
		return false, fmt.Errorf("port %d cut-through %v: %w", devPort, enable, err)
	}
	return r.Previous, nil
}
