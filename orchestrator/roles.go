package orchestrator

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"testbed/inventory"
)

// Role is a device a recipe needs, by what it does in the recipe: its
// kind and what its driver must be able to do.
type Role struct {
	Name string
	Kind string
	// Capabilities its driver must declare (drivers.Driver.Capabilities).
	Capabilities []string
	Desc         string
}

// LinkRole is a fibre or cable a recipe needs between the devices of two
// roles, optionally with a VOA channel on it.
type LinkRole struct {
	Name string
	A, B string // role names
	VOA  bool
	Desc string
}

// Topology is the abstract testbed a recipe needs: its roles and the links
// between them. One binder (Bind) maps it onto a lab's inventory and says
// why a lab does not fit.
type Topology struct {
	Roles []Role
	Links []LinkRole
}

// Declared reports whether a recipe declares this topology: a zero
// Topology (no roles) declares none.
func (t Topology) Declared() bool { return len(t.Roles) > 0 }

// Print writes the requirement for `exp show`.
func (t Topology) Print(w io.Writer) {
	fmt.Fprintln(w, "Roles (the devices of the lab it needs):")
	for _, r := range t.Roles {
		caps := ""
		if len(r.Capabilities) > 0 {
			caps = " with " + strings.Join(r.Capabilities, ", ")
		}
		fmt.Fprintf(w, "  %-14s a %s%s: %s\n", r.Name, r.Kind, caps, r.Desc)
	}
	if len(t.Links) > 0 {
		fmt.Fprintln(w, "Links:")
		for _, l := range t.Links {
			voa := ""
			if l.VOA {
				voa = ", with a VOA channel on it"
			}
			fmt.Fprintf(w, "  %-14s %s <-> %s%s: %s\n", l.Name, l.A, l.B, voa, l.Desc)
		}
	}
}

// Assignment is a binding of a topology: each role's device and each link
// role's inventory link.
type Assignment struct {
	Devices map[string]string
	Links   map[string]*inventory.Link
}

// Bind maps the topology onto the inventory: distinct devices for the
// roles, of the role's kind and with a driver that declares its
// capabilities, such that every link role is an inventory link between
// its two roles' devices (with a VOA when it needs one). It tries every
// assignment (labs are small), and when none fits it explains: which role
// has no candidate and why each device of its kind is not one, or, for
// the link role that no assignment got past, the candidates it tried.
func (t Topology) Bind(inv *inventory.Inventory) (Assignment, error) {
	cands := map[string][]string{}
	whyNot := map[string][]string{}
	var missing []string
	for _, r := range t.Roles {
		var why []string
		for _, n := range inv.DeviceNames() {
			d, _ := inv.Device(n)
			if d.Kind != r.Kind {
				continue
			}
			if lacks := lacking(d, r.Capabilities); len(lacks) > 0 {
				why = append(why, fmt.Sprintf("%s (driver %s) lacks %s", n, d.Driver, strings.Join(lacks, ", ")))
				continue
			}
			cands[r.Name] = append(cands[r.Name], n)
		}
		whyNot[r.Name] = why
		if len(cands[r.Name]) == 0 {
			msg := fmt.Sprintf("role %s needs a %s", r.Name, r.Kind)
			if len(r.Capabilities) > 0 {
				msg += " whose driver has " + strings.Join(r.Capabilities, ", ")
			}
			if len(why) > 0 {
				msg += ": " + strings.Join(why, "; ")
			} else {
				msg += fmt.Sprintf(": the lab has no device of kind %s", r.Kind)
			}
			missing = append(missing, msg)
		}
	}
	if len(missing) == 0 {
		missing = t.tooFew(cands, whyNot)
	}
	if len(missing) > 0 {
		return Assignment{}, &InputError{Msg: fmt.Sprintf("the lab in %s cannot serve this recipe:\n  %s", inv.Path, strings.Join(missing, "\n  "))}
	}
	s := solver{t: t, inv: inv, cands: cands, a: Assignment{Devices: map[string]string{}, Links: map[string]*inventory.Link{}}, failures: map[string][]string{}}
	if s.assign(0) {
		return s.a, nil
	}
	// The link role that failed most deeply is the one to explain.
	worst := ""
	for _, l := range t.Links {
		if len(s.failures[l.Name]) > 0 {
			worst = l.Name
		}
	}
	msg := fmt.Sprintf("the lab in %s cannot serve this recipe: no assignment of its devices to the roles has every link", inv.Path)
	if worst != "" {
		f := s.failures[worst]
		sort.Strings(f)
		f = slices.Compact(f)
		if len(f) > 8 {
			f = append(f[:8], fmt.Sprintf("(and %d more)", len(f)-8))
		}
		lr := t.link(worst)
		msg += fmt.Sprintf("; link %s (%s <-> %s%s) was missing for:\n  %s", worst, lr.A, lr.B, map[bool]string{true: ", with a VOA"}[lr.VOA], strings.Join(f, "\n  "))
	}
	return Assignment{}, &InputError{Msg: msg}
}

// tooFew explains roles that need more distinct devices than they have
// candidates between them (two hosts with the hostagent where the lab has
// one).
func (t Topology) tooFew(cands, whyNot map[string][]string) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range t.Roles {
		key := r.Kind + "/" + strings.Join(r.Capabilities, ",")
		if seen[key] {
			continue
		}
		seen[key] = true
		var roles, union, why []string
		for _, x := range t.Roles {
			if x.Kind == r.Kind && slices.Equal(x.Capabilities, r.Capabilities) {
				roles = append(roles, x.Name)
				for _, c := range cands[x.Name] {
					if !slices.Contains(union, c) {
						union = append(union, c)
					}
				}
				for _, w := range whyNot[x.Name] {
					if !slices.Contains(why, w) {
						why = append(why, w)
					}
				}
			}
		}
		if len(union) < len(roles) {
			msg := fmt.Sprintf("roles %s need %d different devices of kind %s", strings.Join(roles, ", "), len(roles), r.Kind)
			if len(r.Capabilities) > 0 {
				msg += " whose driver has " + strings.Join(r.Capabilities, ", ")
			}
			msg += fmt.Sprintf("; the lab has %d (%s)", len(union), strings.Join(union, ", "))
			if len(why) > 0 {
				msg += ": " + strings.Join(why, "; ")
			}
			out = append(out, msg)
		}
	}
	return out
}

func (t Topology) link(name string) LinkRole {
	for _, l := range t.Links {
		if l.Name == name {
			return l
		}
	}
	return LinkRole{}
}

// lacking lists the capabilities a device's driver does not declare.
func lacking(d *inventory.Device, caps []string) []string {
	var out []string
	for _, c := range caps {
		if !DriverHas(d.Kind, d.Driver, c) {
			out = append(out, c)
		}
	}
	return out
}

type solver struct {
	t        Topology
	inv      *inventory.Inventory
	cands    map[string][]string
	a        Assignment
	failures map[string][]string // link role -> the device pairs it lacked
}

// assign gives role i a device and recurses; links are checked as soon as
// both their ends are assigned.
func (s *solver) assign(i int) bool {
	if i == len(s.t.Roles) {
		return true
	}
	r := s.t.Roles[i]
	for _, dev := range s.cands[r.Name] {
		if slices.Contains(mapValues(s.a.Devices), dev) {
			continue
		}
		s.a.Devices[r.Name] = dev
		if s.linksHold() && s.assign(i+1) {
			return true
		}
		delete(s.a.Devices, r.Name)
	}
	return false
}

// linksHold finds an inventory link for every link role whose two ends
// are assigned.
func (s *solver) linksHold() bool {
	clear(s.a.Links)
	for _, lr := range s.t.Links {
		a, okA := s.a.Devices[lr.A]
		b, okB := s.a.Devices[lr.B]
		if !okA || !okB {
			continue
		}
		l := s.between(a, b, lr.VOA, lr.Name)
		if l == nil {
			s.failures[lr.Name] = append(s.failures[lr.Name], fmt.Sprintf("%s=%s, %s=%s", lr.A, a, lr.B, b))
			return false
		}
		s.a.Links[lr.Name] = l
	}
	return true
}

// between is an inventory link joining devices a and b (a VOA on it when
// voa), not already given to another link role than self.
func (s *solver) between(a, b string, voa bool, self string) *inventory.Link {
	for _, l := range s.inv.Links {
		ends := (l.A.Device == a && l.B.Device == b) || (l.A.Device == b && l.B.Device == a)
		if !ends || (voa && l.VOA == nil) {
			continue
		}
		taken := false
		for name, x := range s.a.Links {
			if x == l && name != self {
				taken = true
			}
		}
		if !taken {
			return l
		}
	}
	return nil
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
