package losssweep

import (
	"math"

	"testbed/experiments/stats"
)

// FramesToResolve is the number of frames a stress test sends so that its
// effective loss is resolved to r (the resolve_effective_loss parameter):
//
//	n = ceil(z^2 / (10 r)),  z = 1.96 (95%)
//
// With no frame lost the 95% Wilson upper bound is z^2/(n+z^2), about
// 10 r: one decade above r. So whichever of r and 100 r is the truth, the
// interval tells them apart: at r the expected count is z^2/10 = 0.38
// frames and even 5 lost frames bound the rate below 3.5e-9 for r = 1e-10;
// at 100 r it is 38 frames, whose interval starts near 0.7 x 100 r.
// For r = 1e-10 (LinkGuardian Fig. 8's lowest effective losses) this is
// 3.84x10^9 frames a point.
func FramesToResolve(r float64) int64 {
	return int64(math.Ceil(stats.Z95 * stats.Z95 / (10 * r)))
}
