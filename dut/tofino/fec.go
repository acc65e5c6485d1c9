package tofino

import (
	"context"
	"fmt"
	"time"
)

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
