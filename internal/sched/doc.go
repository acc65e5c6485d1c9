// Package sched computes circuit schedules for a REACToR-style hybrid ToR: an
// optical circuit switch (OCS) that cycles through a few permutations each
// period, beside a slower electrical packet switch (EPS) that carries what the
// circuits do not.
//
// It is pure data and algorithms: no I/O, and nothing of this project
// imported, like a P4 program's contract package. So the REACToR recipes
// (experiments/reactor), the OCS drivers (instruments/ocs) and the
// simulated lab's REACToR fabric (simlab/reactor, simlab/reactormodel) may
// all use it, without the simulated lab importing a recipe or a driver: it
// is DESIGN's schedule leaf, a package of its own under internal/, outside
// any driver's folder (the architecture test, arch_test.go at the module
// root, lets every layer import internal/ and internal/ import nothing
// above it). Its Schedule is the one
// schedule type: the scheduling OCS driver (instruments/ocs) takes it as is,
// a slot's Perm indexed by the switch's ports from 0.
//
// # The problem
//
// Liu et al., "Circuit Switching Under the Radar with REACToR" (NSDI 2014), §3.2:
// once per accumulation period W the scheduler turns an N x N demand matrix D
// into m circuit configurations P_1..P_m (permutation matrices) with durations
// phi_1..phi_m. Every configuration costs a reconfiguration gap delta during
// which the OCS carries nothing, so
//
//	phi_1 + ... + phi_m + m*delta <= W
//
// and the scheduler wants the sum of the phi_k as large as the demand can use.
// A configuration also has a floor, so that the gap does not eat most of it
// (§5.4 uses at least 40 us including a 20 us delta: every configuration is
// at least half lit). Demand that no circuit serves goes to the EPS, which every host may
// use at its EPS rate in each direction (§3.2, fourth and fifth class
// constraints). Demand of a pair that had a circuit this period but did not
// fit in it stays queued at the host until the next period: a class that was
// unpaused for a circuit is never sent to the EPS in the same period (§3.2,
// third class constraint). [Evaluate] reports the three parts (circuit, EPS,
// deferred) separately.
//
// The paper leaves the algorithm open. This package offers:
//
//   - [RoundRobin]: the schedule of §5.2. N hosts all-to-all, N-1
//     configurations per period, each lasting (W - (N-1)*delta)/(N-1). With
//     W = 1.5 ms and delta = 30 us for 8 hosts that is 184.3 us of light in
//     each 214.3 us slot, a duty cycle of 86%.
//
//   - [BvN]: a Birkhoff-von Neumann decomposition (Birkhoff 1946; used for
//     switch scheduling by Chang, Chen and Huang, "Birkhoff-von Neumann input
//     buffered crossbar switches", INFOCOM 2000). The demand is first stuffed
//     to equal row and column sums, so that it is a multiple of a doubly
//     stochastic matrix; the decomposition then repeatedly takes a perfect
//     matching on the positive entries (Hopcroft-Karp) and subtracts it with
//     weight equal to its smallest entry. The matching taken is the bottleneck
//     one, the perfect matching whose smallest entry is largest, so the
//     weights come out in non-increasing order and truncating the
//     decomposition after k terms keeps exactly the k largest. A matrix that
//     is a sum of permutations with distinct weights, each larger than the
//     sum of the ones below it, is recovered term by term.
//
//   - [Solstice]: the greedy slicing of Liu, Mukerjee, Li, Feltman, Papen,
//     Savage, Seshan, Voelker, Andersen, Kaminsky, Porter and Snoeren,
//     "Scheduling Techniques for Hybrid Circuit/Packet Networks" (CoNEXT
//     2015). Stuff the demand, preferring entries that are already non-zero
//     so the matrix stays sparse; set a threshold r to the largest power of
//     two not above the largest entry; repeatedly find any perfect matching
//     among the entries >= r and subtract it for as long as its smallest
//     entry; when none exists, halve r. It needs far fewer matching searches
//     than the exact bottleneck decomposition. Solstice's own stopping rule
//     (stop when the packet switch can carry what is left) minimises the time
//     to drain a demand; REACToR instead has a fixed period, so here slicing
//     goes on up to the configuration bound and the period is filled.
//
// A related greedy, Eclipse (Bojja Venkatakrishnan, Alizadeh and Viswanath,
// "Costly Circuits, Submodular Schedules and Approximate Caratheodory
// Theorems", SIGMETRICS 2016), picks each configuration and its duration to
// maximise bytes served per unit of time including delta; it is not
// implemented here.
//
// # From decomposition to schedule
//
// Both decompositions give an ordered list of configurations with weights in
// bytes. The schedule keeps at most [Options.MaxConfigs] of them, never more
// than the period can hold ([Constraints.MaxSlots]), and by default as many
// as that bound allows. With [Options.BestCount] it instead keeps the number m
// that delivers the most bytes this period (circuit bytes plus what the EPS
// can carry of the rest), which is how the choice between few long and many
// short configurations (§3.2: "when delta is large with respect to W, it is
// more efficient to use fewer configurations") is made. The kept
// configurations share W - m*delta in proportion to their weights, scaled up
// or down to fill it (REACToR maximises the sum of the phi_k), except that no
// configuration gets less than the minimum slot. Ports whose pair has no
// demand are left dark (-1) rather than given a circuit nobody uses.
//
// Demand is in bytes per period; [FromRates] converts from bits per second.
// The package does no I/O; [Validate] is the scheduler's own check of a
// schedule against the constraints.
package sched
