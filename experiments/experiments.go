// Package experiments gathers the recipes this build offers.
package experiments

import (
	"testbed/experiments/attsweep"
	"testbed/experiments/backpressure"
	"testbed/experiments/fct"
	"testbed/experiments/fec"
	"testbed/experiments/losssweep"
	"testbed/experiments/ocscharacterize"
	"testbed/experiments/rail"
	"testbed/experiments/reactor"
	"testbed/experiments/rehearsal"
	"testbed/experiments/stardust"
	"testbed/orchestrator"
)

// Registry returns every recipe.
func Registry() *orchestrator.Registry {
	return orchestrator.NewRegistry(attsweep.New(), losssweep.New(), backpressure.New(), ocscharacterize.New(), fct.New(), reactor.NewReconfig(), reactor.NewHybrid(), reactor.NewTimeVarying(), rail.NewTopology(), rail.NewQualify(), rail.NewStretch(),
		fec.NewLatency(), fec.NewBER(),
		stardust.NewFabric(), stardust.NewPacking(), stardust.NewIncast(), stardust.NewFailover(), stardust.NewPermutation(), stardust.NewPushPull(), stardust.NewWebFCT(), stardust.NewPackingMix(),
		rehearsal.New())
}
