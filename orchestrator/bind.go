package orchestrator

import (
	"fmt"
	"slices"
	"strings"

	"testbed/inventory"
)

// LinkNeeds is what a recipe needs of each link it binds.
type LinkNeeds struct {
	// VOA: a VOA channel sits on the link.
	VOA bool
	// EndsOn: both ends are ports of one device of this kind (e.g. "trafficgen").
	EndsOn string
	// Across: the ends are ports of two different devices of this kind
	// (e.g. a fibre from one switch to another).
	Across string
}

func (n LinkNeeds) String() string {
	var parts []string
	if n.VOA {
		parts = append(parts, "a VOA channel on it")
	}
	if n.EndsOn != "" {
		parts = append(parts, fmt.Sprintf("both ends on ports of one %s", n.EndsOn))
	}
	if n.Across != "" {
		parts = append(parts, fmt.Sprintf("its ends on two different devices of kind %s", n.Across))
	}
	return strings.Join(parts, " and ")
}

// misfit says why a link does not meet the needs ("" if it does).
func (n LinkNeeds) misfit(inv *inventory.Inventory, l *inventory.Link) string {
	var why []string
	if n.VOA && l.VOA == nil {
		why = append(why, "no voa on it")
	}
	if n.EndsOn != "" {
		a, okA := inv.Device(l.A.Device)
		b, okB := inv.Device(l.B.Device)
		switch {
		case !okA || !okB:
			why = append(why, "an end names a device that does not exist")
		case a.Kind != n.EndsOn:
			why = append(why, fmt.Sprintf("end a is on %s, a %s", a.Name, a.Kind))
		case b.Kind != n.EndsOn:
			why = append(why, fmt.Sprintf("end b is on %s, a %s", b.Name, b.Kind))
		case a.Name != b.Name:
			why = append(why, fmt.Sprintf("ends are on two different %ss (%s, %s)", n.EndsOn, a.Name, b.Name))
		}
	}
	if n.Across != "" {
		a, okA := inv.Device(l.A.Device)
		b, okB := inv.Device(l.B.Device)
		switch {
		case !okA || !okB:
			why = append(why, "an end names a device that does not exist")
		case a.Kind != n.Across:
			why = append(why, fmt.Sprintf("end a is on %s, a %s", a.Name, a.Kind))
		case b.Kind != n.Across:
			why = append(why, fmt.Sprintf("end b is on %s, a %s", b.Name, b.Kind))
		case a.Name == b.Name:
			why = append(why, fmt.Sprintf("both ends are on %s", a.Name))
		}
	}
	return strings.Join(why, "; ")
}

// BindLinks fills a role with links: the named ones (each must fit), or if
// none are named every link in the lab that fits. When nothing fits it says,
// link by link, why not.
func BindLinks(inv *inventory.Inventory, role string, names []string, needs LinkNeeds) ([]*inventory.Link, []Binding, error) {
	var out []*inventory.Link
	var binds []Binding
	if len(names) > 0 {
		var problems []string
		for _, n := range names {
			l, ok := inv.Link(n)
			if !ok {
				var known []string
				for _, x := range inv.Links {
					known = append(known, x.Name)
				}
				problems = append(problems, fmt.Sprintf("no link %q in %s (links: %s)", n, inv.Path, strings.Join(known, ", ")))
				continue
			}
			if why := needs.misfit(inv, l); why != "" {
				problems = append(problems, inv.LinkErrorf(l, "", "link %s cannot serve as %s: %s", n, role, why).Error())
				continue
			}
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
		if len(problems) > 0 {
			return nil, nil, &InputError{Msg: strings.Join(problems, "\n")}
		}
	} else {
		var why []string
		for _, l := range inv.Links {
			if w := needs.misfit(inv, l); w != "" {
				why = append(why, fmt.Sprintf("  %s: %s", l.Name, w))
				continue
			}
			out = append(out, l)
		}
		if len(out) == 0 {
			msg := fmt.Sprintf("the lab in %s cannot serve this recipe: role %q needs a link with %s", inv.Path, role, needs)
			if len(inv.Links) == 0 {
				msg += "; the inventory lists no links"
			} else {
				msg += "; none of its links fits:\n" + strings.Join(why, "\n")
			}
			return nil, nil, &InputError{Msg: msg}
		}
	}
	for _, l := range out {
		detail := describeLink(l)
		if l.VOA != nil {
			detail += fmt.Sprintf(", voa %s ch%d", l.VOA.Device, l.VOA.Channel)
		}
		detail += fmt.Sprintf(", %s:%s -> %s:%s", l.A.Device, l.A.Port, l.B.Device, l.B.Port)
		binds = append(binds, Binding{Role: role, Resource: "link " + l.Name, Detail: detail})
	}
	return out, binds, nil
}
