package orchestrator

import (
	"fmt"
	"sort"
	"strings"

	"testbed/inventory"
)

// Recipe is an experiment: it declares itself (Meta) and turns its typed
// parameters, with the lab it is given, into a Plan. A recipe never speaks
// a vendor protocol: it reaches devices through the RunContext's driver
// interfaces.
type Recipe interface {
	// Meta is what the recipe declares about itself: name, version,
	// summary, description, parameters, headline metrics, bench and
	// topology. It is a pure function of the recipe (no lab, no
	// parameters), read by exp list/show, the docs and the engine.
	Meta() Meta
	// Plan binds the recipe's roles to the lab and lays out every step.
	// It must not touch any device: the dry run calls it.
	Plan(pc *PlanContext) (*Plan, error)
}

// Meta is a recipe's declaration of itself.
type Meta struct {
	// Name is the recipe's name on the command line.
	Name string
	// Version goes into every bundle: bump it when results would change.
	Version string
	// Summary is one line for `exp list`; Description a paragraph for
	// `exp show` and the recipe reference.
	Summary     string
	Description string
	// Params are the recipe's typed parameters (units, limits, choices).
	Params []ParamSpec
	// Headlines name the summary's numbers that answer what the recipe
	// reproduces (a paper's numbers), in the order they are shown at the
	// end of a run and in `results list`. Each is a metric path as
	// `results show` prints it; `*` matches one dotted segment
	// (`links.*.loss_cliff_db.1e-06`). Nil: none declared.
	Headlines []string
	// Bench is the built-in simulated bench the recipe needs when it is
	// not the default one (its roles are not on the default bench, such as
	// rail-stretch's spools of fibre): with no inventory and no bench
	// given, a run of it starts that bench. "": the default bench.
	Bench string
	// Topology is the abstract testbed the recipe needs (roles and links),
	// printed by `exp show` and bound by Topology.Bind; its zero value
	// (no roles) declares none.
	Topology Topology
}

// PlanContext is what a recipe plans with.
type PlanContext struct {
	Params    *Params
	Lab       *inventory.Inventory
	Simulated bool
	// RunsDir is the directory bundles are written under ("" when none):
	// a recipe may take its input from an earlier run's bundle there.
	RunsDir string
}

// Registry holds the recipes a binary offers.
type Registry struct {
	recipes map[string]Recipe
}

// NewRegistry makes a registry of the given recipes.
func NewRegistry(rs ...Recipe) *Registry {
	r := &Registry{recipes: map[string]Recipe{}}
	for _, x := range rs {
		r.recipes[x.Meta().Name] = x
	}
	return r
}

// Get returns the named recipe or an error listing the known ones.
func (r *Registry) Get(name string) (Recipe, error) {
	if x, ok := r.recipes[name]; ok {
		return x, nil
	}
	return nil, Inputf("unknown recipe %q (known: %s)", name, strings.Join(r.Names(), ", "))
}

// Names lists the recipes, sorted.
func (r *Registry) Names() []string {
	var n []string
	for k := range r.recipes {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// CheckAttenuation checks a planned VOA setting against the inventory: the
// device is a VOA, the channel exists, and the value is inside its limits.
func (pc *PlanContext) CheckAttenuation(device string, channel int, dB float64) error {
	d, ok := pc.Lab.Device(device)
	if !ok {
		return Inputf("%s: no device %q in the inventory", pc.Lab.Path, device)
	}
	if d.Kind != "voa" {
		return pc.Lab.DeviceErrorf(d, "kind", "device %s is a %s, not a voa", device, d.Kind)
	}
	if channel < 1 || (d.Channels > 0 && channel > d.Channels) {
		return pc.Lab.DeviceErrorf(d, "channels", "%s has no channel %d", device, channel)
	}
	if d.Limits != nil && (dB < d.Limits.MinDB || dB > d.Limits.MaxDB) {
		return pc.Lab.DeviceErrorf(d, "limits", "planned attenuation %.2f dB on %s channel %d is outside the limits [%.2f, %.2f] dB",
			dB, device, channel, d.Limits.MinDB, d.Limits.MaxDB)
	}
	return nil
}

// RestingAttenuation is where a VOA channel goes after a run: the
// inventory's safe_state if given, else nil (restore to the value found).
func RestingAttenuation(d *inventory.Device) *float64 {
	if d != nil && d.SafeState != nil {
		return d.SafeState.AttenuationDB
	}
	return nil
}

func describeLink(l *inventory.Link) string {
	return fmt.Sprintf("%s fec %s", l.Transceiver, l.FEC)
}
