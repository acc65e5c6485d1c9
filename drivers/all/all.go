// Package all links every driver of this build into the registry (package
// drivers): importing it runs each driver package's registration. A new
// driver package is one import here.
package all

import (
	_ "testbed/dut/fabric"             // stardust-model
	_ "testbed/dut/host"               // linux-ssh
	_ "testbed/dut/tofino"             // tofino-bfrt
	_ "testbed/dut/tofino/bfrtgrpc"    // tofino-bfrt-grpc
	_ "testbed/instruments/ocs"        // mordia-rest, polatis-scpi
	_ "testbed/instruments/trafficgen" // otg, trex
	_ "testbed/instruments/voa"        // keysight-n77xx, ozoptics-dd100
)
