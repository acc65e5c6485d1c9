package phy_test

import (
	"fmt"

	"testbed/simlab/phy"
)

// The per-hop FEC latency table of the README: 64 B and 1518 B frames sent back to back
// over each link type; latency from the header's first bit at the receiver to the
// header decoded (cut-through) or the frame decoded (store-and-forward), in ns.
// Run: go test -run Example_perHop -v ./simlab/phy
func Example_perHop() {
	links := []phy.LinkConfig{
		phy.Preset25G(phy.FECNone), phy.Preset25G(phy.FECFire), phy.Preset25G(phy.FECRS528),
		phy.Preset50G2(), phy.Preset50GPAM4(), phy.Preset100GSR4(),
	}
	pipelined := phy.Preset25G(phy.FECRS528)
	pipelined.Name += " (pipelined decoder)"
	pipelined.Accounting = phy.Pipelined
	links = append(links, pipelined)
	fmt.Println("| link | T_acc | T_dec | CT 64 B min / max | SAF 64 B max | SAF 1518 B max | CT jitter |")
	fmt.Println("|---|---|---|---|---|---|---|")
	for _, c := range links {
		l, err := phy.NewLink(c)
		if err != nil {
			fmt.Println(err)
			return
		}
		small, err := phy.MeasureHop(c, 64, 2000)
		if err != nil {
			fmt.Println(err)
			return
		}
		big, err := phy.MeasureHop(c, 1518, 2000)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("| %s | %.1f | %.0f | %.1f / %.1f | %.1f | %.1f | %.1f |\n", c.Name, l.AccumulationNs(), l.Config().DecodeNs,
			small.CutThrough.Min, small.CutThrough.Max, small.StoreAndForward.Max,
			big.StoreAndForward.Max, small.CutThrough.PeakToPeak())
	}
	// Output:
	// | link | T_acc | T_dec | CT 64 B min / max | SAF 64 B max | SAF 1518 B max | CT jitter |
	// |---|---|---|---|---|---|---|
	// | 25G-none | 2.6 | 0 | 5.1 / 5.1 | 20.5 | 486.4 | 0.0 |
	// | 25G-fc-fec | 81.9 | 33 | 39.3 / 151.7 | 166.8 | 796.9 | 112.4 |
	// | 25G-rs528 | 204.8 | 15 | 25.4 / 242.7 | 257.7 | 752.1 | 217.3 |
	// | 50G-2x25-rs528 | 102.4 | 15 | 20.2 / 136.4 | 143.8 | 406.1 | 116.2 |
	// | 50G-PAM4-rs544 | 102.4 | 31 | 39.1 / 171.3 | 178.5 | 471.9 | 132.2 |
	// | 100G-SR4-rs528 | 51.2 | 15 | 17.6 / 83.2 | 86.9 | 233.0 | 65.6 |
	// | 25G-rs528 (pipelined decoder) | 204.8 | 15 | 25.4 / 227.7 | 242.7 | 707.1 | 202.3 |
}
