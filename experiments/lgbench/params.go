package lgbench

import (
	"time"

	o "testbed/orchestrator"
)

// Params are the parameters every recipe on the bench takes, besides its
// own: the sink and packet generator ports, how far the switches may be
// changed, and how a loss rate is found by measuring.
func Params() []o.ParamSpec {
	return []o.ParamSpec{
		{Name: "calib_tolerance", Type: o.TypeFloat, Default: 1.5, Min: o.Bound(1.05), Max: o.Bound(10), Description: "accept a measured loss rate within [rate/calib_tolerance, rate]"},
		{Name: "calib_losses", Type: o.TypeInt, Default: int64(400), Min: o.Bound(10), Max: o.Bound(1e7), Description: "losses the accepting calibration measurement expects"},
		{Name: "calib_max_frames", Type: o.TypeInt, Unit: "frames", Default: int64(100_000_000), Min: o.Bound(1000), Max: o.Bound(1e15), Description: "cap on frames per calibration measurement"},
		{Name: "start_db", Type: o.TypeFloat, Unit: "dB", Default: 0.0, Min: o.Bound(0), Max: o.Bound(100), Description: "attenuation the calibration scan starts at"},
		{Name: "scan_step_db", Type: o.TypeFloat, Unit: "dB", Default: 0.5, Min: o.Bound(0.01), Max: o.Bound(100), Description: "step of the calibration's upward scan"},
		{Name: "max_db", Type: o.TypeFloat, Unit: "dB", Default: 25.0, Min: o.Bound(0), Max: o.Bound(100), Description: "highest attenuation the scan may set"},
		{Name: "sink_port", Type: o.TypeString, Default: "sink", Description: "the receiving switch's port (inventory name) that delivered frames leave by"},
		{Name: "pktgen_port", Type: o.TypeInt, Default: int64(68), Min: o.Bound(0), Max: o.Bound(511), Description: "the packet generator's dev port (68 on Tofino 1 pipe 0)"},
		{Name: "replace_program", Type: o.TypeBool, Default: false, Description: "restart a switch daemon that runs another P4 program"},
		{Name: "port_up_timeout", Type: o.TypeDuration, Default: 30 * time.Second, Min: o.Bound(0.001), Max: o.Bound(3600), Description: "how long a port may take to come up"},
	}
}

// OpenOptions are the Options the bench parameters ask for.
func OpenOptions(p *o.Params) Options {
	return Options{ReplaceProgram: p.Bool("replace_program"), PortUpTimeout: p.Duration("port_up_timeout")}
}

// CalibrationFrom is the calibration the bench parameters ask for, with
// frames of frameBytes; the scan starts at start_db.
func CalibrationFrom(p *o.Params, frameBytes int) CalibrateOptions {
	return CalibrateOptions{StartDB: p.Float("start_db"), StepDB: p.Float("scan_step_db"), MaxDB: p.Float("max_db"),
		Tolerance: p.Float("calib_tolerance"), Losses: p.Int("calib_losses"), MaxFrames: p.Int("calib_max_frames"), FrameBytes: frameBytes,
		Stress: StressFrom(p, frameBytes)}
}

// StressFrom is a packet generator run of frameBytes frames out of the
// bench parameters' pktgen_port (Frames left to set).
func StressFrom(p *o.Params, frameBytes int) Stress {
	return Stress{AppID: 1, PktgenPort: int(p.Int("pktgen_port")), FrameBytes: frameBytes, Poll: time.Millisecond}
}
