GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)

.PHONY: all build proto lint-openapi test test-race test-plain test-plain-lab test-long test-long-plain test-long-race vet fmt-check models-single-goroutine test-lists bench fuzz sweep soak load clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/testbed ./cmd/testbed

# The CLI reference (docs/cli, cobra's markdown generator) and the recipe
# reference (docs/recipes, exp show --output markdown), from the code;
# TestGeneratedDocsAreCurrent fails when the committed pages are stale.
.PHONY: docs
docs:
	$(GO) run ./cmd/testbed gen-docs docs

# The test command of the README and of CI: formatting, vet, and the
# tests, split by one rule: a test runs under the race detector when
# goroutines of ours meet in what it checks (servers, drivers, the engine,
# leases, signals, aborts, a clock stepped while others read); a test whose
# time goes into stepping a model (frames, cells, flows, sweeps through the
# simulated lab) runs without it when its package's other tests race the
# same emulators, drivers and engine: the detector finds nothing more
# there and makes model code 5-10 times slower. Genuinely long end-to-end
# runs (LONG below) are `make test-long`'s, which CI runs after make test.
#
# The pure models below run in one goroutine (checked here: no goroutines,
# channels or sync in them), so the detector has nothing to find; and the
# OTG conformance tests, whose loading of the 1 MB OpenAPI document the
# detector slows from 0.5 s to 13 s (otg_spec_test.go), run without it.
MODELS := ./simlab/lgmodel ./simlab/fctmodel ./simlab/reactormodel ./simlab/physics ./internal/sched ./simlab/phy ./simlab/stardustmodel ./simlab/ecmpmodel ./simlab/internal/evheap ./simlab/internal/fifo ./simlab/tcpmodel ./simlab/scenario

# The same holds for the packages below, whose tests and every package of
# ours those tests import run in one goroutine (checked with the models:
# no go statement, channel, sync or t.Parallel in any of their files):
# parsers, tables and P4 contracts. Under the detector each was a test
# binary linked with the race runtime (half as much CPU again as without)
# and run to find nothing.
PURE := ./experiments/rail/topo ./experiments/stats ./internal/readfile ./internal/redact ./inventory \
	./p4/ecmp ./p4/internal/p4check ./p4/linkguardian ./p4/stardust ./p4/timestamp

# Tests that drive the frame-level models for a second of 100G traffic:
# under the race detector they take 30-60 s each instead of 5 s, so they
# skip there (raceDetector in their packages) and run here without it.
# Their packages' other tests run the same simulated switches and hosts
# under -race; the simulated iperf3's stepping along the switches' clock
# (tofino.Dataplane.Follow) is raced by TestSimulatedIperf3FollowRace
# (simlab/follow_race_test.go), a flow of 100 MB (iperf3 -n, some 35 ms)
# on a 25G port: a whole second (-t 1) took 95-107 s under the detector.
#
# TestFCTPerFlowProgramDropTail runs 30,000 per-flow trials through the
# recipe (3 s, 20 s under the detector) for its tail statistics, and
# TestSimulatedHostsPerFlowFCTWithProgramDrop (simlab) 30,000 new
# connections through the simulated hosts (1.9 s of CPU, 10.7 s under the
# detector, where a loaded machine made it miss its hang guard). The simulated
# hosts' connections run under -race in simlab's other host tests, the
# recipe's blocks, aborts and restores in the fct package's other tests.
#
# PLAIN_TESTS (the race half skips them by name, the plain half runs them
# in PLAIN_PKGS) are the same kind: recipes and twins stepping the models
# through the simulated lab for their numbers (the Fig. 1 cliffs, the
# loss-sweep's points over both switch drivers and without each setup
# step, FEC's BER and latency, Fig. 9's reorder buffer, the hosts' FCTs,
# REACToR's hybrid on 24 hosts, RAIL's spools and Clos bench, the twins'
# sweeps), 15-280 s each under the detector. What is concurrent on their
# path races in the tests that stay: each package's abort, cancel and
# restore tests (losssweep, fec, attsweep, backpressure, fct, reactor),
# rail's qualify on the default lab, simlab's Follow race and fabric
# tests, the drivers' tests against the same emulators, the engine's own.
# TestDefaultBenchSummaries (the default bench's golden summary.json per
# recipe, 2.1 s of CPU without the detector, 7.9 s under it) stays in make
# test for every change's sake; its real-time case is make test-long's.
# (CPU is user+sys of the test binary alone, /usr/bin/time on go test -c's
# binary with -test.run '^TestX$'; go test adds some 2.5 s of its own.)
# TestNoFunctionTooComplex parses the source (no goroutine).
SLOW_UNDER_RACE := TestBackpressureWithATCPFlow TestSimulatedIperf3FollowsTheSwitchesClock TestFCTTailWithAndWithoutLinkGuardian TestFCTPerFlowProgramDropTail TestSimulatedHostsPerFlowFCTWithProgramDrop
PLAIN_TESTS := TestSweepReproducesFig1Ordering TestBackpressureKeepsTheReorderBufferInBounds \
	TestFECLatencyOnTheSimulatedLab TestFECBEROnTheSimulatedLab TestFECBERSameSummaryOverBothSwitchDrivers \
	TestLossSweepSameSummaryOverBothSwitchDrivers TestLossSweepProtectsAndCostsWhatThePaperSays \
	TestStressBeyondOneGeneratorRunAddsUp TestStressTailSkipsOnlyReadsThatCannotFindTheGeneratorDone TestResolveEffectiveLossPicksTheFrames \
	TestSimulatedHostsFCTAcrossTheProtectedLink TestTRexBenchRunsAttenuationSweep TestTwinLinkOptionsShiftTheCliff \
	TestLineOfThreeSwitchesLossSweepBothLinksInOneRun TestTwinOfCircuitSwitchesAndAReactor \
	TestTwinOfSwitchesAndHostsRunsLossSweepAndFCT TestLossSweepWithoutTheTxBufferSessionDoesNotProtect \
	TestLossSweepWithoutTheExplicitACKDoesNotProtect TestLossSweepWithoutTheTimerDoesNotProtect TestLossSweepPacedAsTheArtifact \
	TestFECLatencyCutThroughVsStoreAndForward TestFECLatencyChainEnvelopeGrowsWithHops TestHybridAvoidsTheCliff \
	TestStretchOnTheSimulatedBench TestQualifyAndTopologyOnTheClosBench \
	TestDefaultBenchSummaries TestNoFunctionTooComplex
PLAIN_PKGS := . ./experiments/attsweep ./experiments/backpressure ./experiments/fec ./experiments/fct ./experiments/losssweep \
	./experiments/rail ./experiments/reactor ./simlab

# The Stardust recipes run their model in process (model-only: no
# emulator behind them), every test a few seconds of cell-level stepping
# that the detector makes 5-10 times slower: their interrupted runs (where
# the recipes' own goroutines and locks meet the orchestrator's) run under
# -race, all their other tests without it (-skip: those tests check
# nothing more under the detector). The two interrupted runs on the
# twelve-switch bench (LONG_RACE: 80-180 s under the detector) are make
# test-long's, under it, beside the bench's other whole recipes (LONG):
# without it they were 11 s of make test's CPU (the bench's bring-up over
# SSH, most of it) for a subset of what the run under it checks; the
# model-only interrupted runs (TestFailoverInterruptedLeavesAReadable-
# Bundle and the other recipes') stay under it here.
#
# The command's tests (cmd/testbed) and the recipes over both switch
# drivers (experiments/recipetest) run whole recipes end to end against
# the simulated lab: under the detector they were the longest packages
# (190-340 s of the race half, most of CI's time) and find nothing the
# packages they drive do not: the emulators, drivers, orchestrator and
# recipes run their own tests under -race. What is concurrent in the
# command itself (signals, second interrupts, kills, leases over files
# and etcd, the metrics server, monitor, a lab served to another process)
# is in the tests RACE_RUN names: those run under -race, the rest without.
NORACE := ./cmd/testbed ./experiments/stardust ./experiments/recipetest
RACE_RUN := Interrupt|Killed|Lease|Metrics|Monitor|Signal|ServesAnother
# The NORACE packages with a test RACE_RUN names (a func Test... in their
# _test.go files): a package without one (recipetest) is not linked under
# the detector only to run nothing (1-2 s of CPU a test binary).
NORACE_RACE = $(foreach p,$(NORACE),$(if $(shell grep -l -s -E '^func Test[[:alnum:]_]*($(RACE_RUN))' $(p)/*_test.go),$(p)))
LONG_RACE := TestFailoverOnTheBenchInterrupted TestFabricOnTheBenchInterrupted
space := $(subst ,, )
alt = ^($(subst $(space),|,$(strip $(1))))$$

# The race half and the plain half of the tests run side by side (make
# -j3: the plain half in two parts, its packages and the lab's model-
# stepping tests, which were half of it): many packages spend most of
# their time waiting on timeouts, subprocesses and each other's
# goroutines, so one go test alone leaves a core idle much of the time.
# -Oline prints each go test's output in one piece, when it ends; make
# fails if any part fails. Within the race half, the run of RACE_RUN's
# tests of the NORACE packages goes first (it runs beside the plain half)
# and the longest packages lead the list, so the run does not end on one
# long package with the other core idle.
RACE_FIRST := ./simlab ./dut/tofino
RACE_P ?= 4

# Every go test below: -count=1 (never a cached result); -ldflags='-s -w'
# links the test binaries without DWARF and the symbol table, as go test
# does by default for a binary it does not keep (make test keeps them:
# TESTBIN below): only a debugger reads them; stack traces, profiles and
# the race detector's reports come from the runtime's own tables. Without
# DWARF, the race half's 60 test binaries took 65 s of CPU to link
# instead of 91 s, the plain ones' 58 s instead of 78 s. -vet=off because
# make test has run the whole of go vet ./... first, a superset of the
# checks go test runs on each package (5-10 s of CPU again). Run a part
# alone (make test-race) after make vet.
TESTFLAGS := -count=1 -vet=off '-ldflags=-s -w'

# A test binary built with -race sleeps a second before it exits (the
# detector's atexit_sleep_ms, 1000 by default, time for goroutines still
# running to report): a second of wall time a binary, in one of RACE_P's
# slots, over the race half's 50-odd binaries. Races found during a test
# fail that test, and any found before exit still fail the binary (exit
# code 66); without the sleep only a goroutine left running past the
# binary's last test can end before it reports.
RACEENV := GORACE=atexit_sleep_ms=0

# make test keeps its test binaries (scripts/gotest: go test -o, one
# directory for each go test below): go links a binary again only when it
# would differ, found by the build ID with which go build and go install
# find a command up to date. Every test still runs every time (-count=1);
# what is saved is linking a binary again that nothing it holds has
# changed: make test's go tests with every test left out (-run=^NONE$,
# so only building and starting the binaries) took 175-197 s of CPU with
# every binary linked and 25-29 s with none to link (at load 14-27), and
# make test alone takes about as long as its CPU on two cores. After a
# change, what links the changed packages is linked again (almost every
# binary, for transport). About 1.5 GB; make clean removes it.
TESTBIN ?= $(CURDIR)/.testbin
GOTEST = GO=$(GO) scripts/gotest

# The test binaries of the run share one headless browser for the reports
# they render (internal/browsertest: TESTBED_TEST_BROWSER_DIR), stopped
# after the tests, passed or not; a run killed outright leaves it to end
# itself 30 s after its last user (CONTRIBUTING.md).
test: fmt-check vet models-single-goroutine test-lists
	@dir=$$(mktemp -d "$${TMPDIR:-/tmp}/testbed-browser.XXXXXX") || exit 1; \
	TESTBED_TEST_BROWSER_DIR=$$dir $(MAKE) --no-print-directory -j3 -Oline test-race test-plain test-plain-lab; \
	code=$$?; sh internal/browsertest/browser.sh stop "$$dir"; exit $$code

test-race:
	$(RACEENV) $(GOTEST) $(TESTBIN)/race1 -race $(TESTFLAGS) -timeout 8m -run '$(RACE_RUN)' -skip '$(call alt,$(LONG_RACE))' -- $(NORACE_RACE)
	$(RACEENV) $(GOTEST) $(TESTBIN)/race2 -race $(TESTFLAGS) -p $(RACE_P) -timeout 8m -skip '$(call alt,$(PLAIN_TESTS))' -- $(RACE_FIRST) $$($(GO) list ./... | grep -v -F -x $(foreach m,$(RACE_FIRST) $(MODELS) $(PURE) $(NORACE),-e testbed/$(patsubst ./%,%,$(m))))

test-plain:
	$(GOTEST) $(TESTBIN)/plain $(TESTFLAGS) -timeout 8m -skip '$(RACE_RUN)' -- $(NORACE) $(MODELS) $(PURE)
	$(GOTEST) $(TESTBIN)/spec $(TESTFLAGS) -timeout 8m -run 'Spec' -- ./instruments/trafficgen

test-plain-lab:
	$(GOTEST) $(TESTBIN)/lab $(TESTFLAGS) -timeout 8m -run '$(call alt,$(SLOW_UNDER_RACE) $(PLAIN_TESTS))' -- $(PLAIN_PKGS)

# The long end-to-end tests, not part of make test; CI runs them after it.
# LONG: whole recipes on the twelve-switch Stardust bench (25-50 s each),
# the LinkGuardian recipes compared over both switch drivers: they skip,
# saying how to run them, unless TESTBED_LONG is set
# (recipetest.Long). LinkGuardian's exactness sweeps (stepping against
# replaying, looping ahead, jumping cycles: simlab/lgmodel) over all their
# seeds and frames; make test runs a short case of each (a third of the
# CPU) that fails for the same broken mechanisms. The FCT tail at the
# paper's 1e-3 over 30,000 trials a mode (make test: 5e-3 over 6,000,
# as many affected trials at a fifth of the CPU). LONG_RACE (above) under
# the detector. And the tests
# that read a switch running in real time (the microsecond OCS), alone and
# without the detector, after the others: TestReconfigAllToAllFollows-
# FromTheSlots needs a schedule replacement, sent over REST, to reach the
# switch within a few 1.5 ms periods, TestTimeVaryingSharesFollowFromThe-
# Schedule three; ocs-characterize's test of the switch's nights
# (TestRecipeRecordsTheSwitchsMechanism) must read every one, and so must
# the default bench's ocs-characterize summary (REALTIME_SIMLAB). Beside
# other packages, or under the detector on a loaded machine, they missed
# their slots; the reactor and ocscharacterize packages' other tests (an
# abort leaving the switch dark) run under -race in make test.
LONG := TestLinkGuardianRecipesSameSummaryOverBothSwitchDrivers \
	TestIncastOnTheBench TestFailoverOnTheBench TestPushPullOnTheBench TestPermutationOnTheBench \
	TestFabricOnTheBench TestPackingOnTheBench \
	TestReplayEqualsStepping TestLoopAheadEqualsStepping TestCycleSkipEqualsStepping TestPacedRunEqualsStepping TestPacedReplayInstallsTheSlack \
	TestFCTTailWithAndWithoutLinkGuardian
LONG_PKGS := ./experiments/recipetest ./experiments/stardust ./simlab/lgmodel ./experiments/fct
REALTIME := TestReconfigAllToAllFollowsFromTheSlots TestTimeVaryingSharesFollowFromTheSchedule TestRecipeRecordsTheSwitchsMechanism
REALTIME_SIMLAB := TestDefaultBenchSummaries/ocs-characterize

test-long:
	@$(MAKE) --no-print-directory -j2 -Oline test-long-plain test-long-race
	$(GO) test $(TESTFLAGS) -p 1 -timeout 8m -run '$(call alt,$(REALTIME))' ./experiments/reactor ./experiments/ocscharacterize
	TESTBED_LONG=1 $(GO) test $(TESTFLAGS) -timeout 8m -run '$(REALTIME_SIMLAB)' ./simlab

test-long-plain:
	TESTBED_LONG=1 $(GO) test $(TESTFLAGS) -timeout 10m -run '$(call alt,$(LONG))' $(LONG_PKGS)

test-long-race:
	$(RACEENV) $(GO) test -race $(TESTFLAGS) -timeout 10m -run '$(call alt,$(LONG_RACE))' ./experiments/stardust

models-single-goroutine:
	@if grep -n -E 'go func|go [a-zA-Z_.]+\(|"sync"|chan |\.Parallel\(\)' $(addsuffix /*.go,$(MODELS)) \
	    $$($(GO) list -deps -test -f '{{.Dir}}' $(PURE) | grep -F '$(CURDIR)/' | sort -u | sed 's|$$|/*.go|'); then \
	  echo "a package in MODELS or PURE, or one PURE's tests import, uses concurrency: run it under -race (remove it from the list)"; exit 1; fi

# Every test runs in one half of make test or the other, never in neither
# (checked here, with the lists): the plain half skips RACE_RUN's names
# in MODELS and PURE, which the race half does not run, and fuzz seeds and
# examples so named in NORACE (its race run takes only packages with a
# func Test... so named); the race half skips PLAIN_TESTS, which the
# plain half runs only in PLAIN_PKGS (and in MODELS, PURE and NORACE,
# which it runs whole). A name in PLAIN_TESTS or SLOW_UNDER_RACE that no
# test has is a list gone stale.
test-lists:
	@bad=$$(grep -n -s -E '^func (Test|Fuzz|Example)[[:alnum:]_]*($(RACE_RUN))' $(addsuffix /*_test.go,$(MODELS) $(PURE)); \
	  grep -n -s -E '^func (Fuzz|Example)[[:alnum:]_]*($(RACE_RUN))' $(addsuffix /*_test.go,$(NORACE))); \
	if [ -n "$$bad" ]; then echo "$$bad"; echo "test-lists: named with a word of RACE_RUN ($(RACE_RUN)) in MODELS or PURE (or a fuzz target or example in NORACE), it would run in neither half of make test: rename it"; exit 1; fi
	@ok=" $(patsubst ./%,%,$(PLAIN_PKGS) $(MODELS) $(PURE) $(NORACE)) "; files=$$(git ls-files '*_test.go'); \
	for t in $(PLAIN_TESTS) $(SLOW_UNDER_RACE); do \
	  dirs=$$(grep -l -E "^func $$t\(" $$files | xargs -r -n1 dirname | sort -u); \
	  if [ -z "$$dirs" ]; then echo "test-lists: $$t (PLAIN_TESTS or SLOW_UNDER_RACE) is no test of the module: remove it from the list"; exit 1; fi; \
	  for d in $$dirs; do case "$$ok" in *" $$d "*) ;; *) echo "test-lists: $$t in $$d: the race half skips it (PLAIN_TESTS) and the plain half does not run $$d: add ./$$d to PLAIN_PKGS"; exit 1;; esac; done; \
	done

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Every fuzz target of the module (any func FuzzXxx in a _test.go file),
# each for $(FUZZTIME) (default 30s); not part of make test, whose go test
# runs only the targets' seed corpora. FUZZ_PARALLEL=1 uses one worker.
fuzz:
	scripts/fuzz.sh

# The first command to try: the attenuation sweep on the simulated lab.
sweep:
	$(GO) run ./cmd/testbed exp run attenuation-sweep

# The crash-recovery soak (scripts/soak.sh), not part of `make test`: N
# random SIGINTs and SIGKILLs across the recipes against `testbed lab up`,
# then every device asked directly (scripts/soakcheck), every bundle
# verified and one more run that must be clean. `make soak N=40 SEED=7`;
# .ci/run runs N=3.
N    ?= 12
SEED ?= 1
soak:
	N=$(N) SEED=$(SEED) scripts/soak.sh

# The nightly suite under load (scripts/load.sh), not part of make test:
# RUNS runs while stress-ng keeps LOAD_FACTOR x the cores busy; skips,
# saying why, without stress-ng. `make load RUNS=3`.
RUNS ?= 3
LOAD_FACTOR ?= 4
load:
	RUNS=$(RUNS) LOAD_FACTOR=$(LOAD_FACTOR) scripts/load.sh

# The BF Runtime gRPC code (internal/bfrtpb) from the SDE's bfruntime.proto:
# needs protoc (Debian's protobuf-compiler); the Go plugins are installed
# by the script.
proto:
	internal/bfrtpb/gen.sh

# Redocly's linter with its recommended rules on the OCS switch's API
# (instruments/ocs/openapi.yaml): the redocly command if installed, else
# npx's cached @redocly/cli; without either it says so and skips (no
# download here: .ci/run installs it with npm when npm is there).
REDOCLY_VERSION ?= 2.77.0
lint-openapi:
	@if command -v redocly >/dev/null 2>&1; then \
		redocly lint --extends recommended instruments/ocs/openapi.yaml; \
	elif command -v npx >/dev/null 2>&1 && npx --no-install @redocly/cli@$(REDOCLY_VERSION) --version >/dev/null 2>&1; then \
		npx --no-install @redocly/cli@$(REDOCLY_VERSION) lint --extends recommended instruments/ocs/openapi.yaml; \
	else \
		echo "lint-openapi: skipped: neither redocly nor npx with @redocly/cli@$(REDOCLY_VERSION) is installed (npm install -g @redocly/cli@$(REDOCLY_VERSION))"; \
	fi

clean:
	rm -rf bin .testbin
