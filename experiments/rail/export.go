package rail

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	o "testbed/orchestrator"
	"testbed/results"
)

func checkPrefix(s string) error {
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return fmt.Errorf("%q: expected an address block such as 10.1.0.0/16", s)
	}
	if p.Masked() != p {
		return fmt.Errorf("%q: host bits set (the block is %s)", s, p.Masked())
	}
	return nil
}

// ClassesDoc is data/rail/classes.json: what a controller that computes
// routes centrally loads (RAIL §5.2: one network-wide controller told not to
// use certain links for given prefixes). Every class lists the links it may
// use and those it may not, with the ports at both ends, and its paths with
// the coding the hosts' error-correction module applies on each.
type ClassesDoc struct {
	Format      string     `json:"format"`
	RunID       string     `json:"run_id"`
	LinksFile   string     `json:"links_file"`
	LinksSHA256 string     `json:"links_sha256"`
	Estimate    string     `json:"estimate"`
	TargetLoss  float64    `json:"target_loss"`
	Classes     []ClassDoc `json:"classes"`
}

// ClassDoc is one class of ClassesDoc.
type ClassDoc struct {
	Class     int       `json:"class"`
	Bound     float64   `json:"bound"`
	Prefix    string    `json:"prefix"`
	WorstPPER *float64  `json:"worst_pper"`
	WorstPath []string  `json:"worst_path,omitempty"`
	Links     []LinkDoc `json:"links"`
	Excluded  []LinkDoc `json:"excluded"`
	Paths     []PathDoc `json:"paths"`
}

// LinkDoc names a link and its ports.
type LinkDoc struct {
	Link           string `json:"link"`
	A              string `json:"a"`
	APort          string `json:"a_port,omitempty"`
	B              string `json:"b"`
	BPort          string `json:"b_port,omitempty"`
	RemovedInClass int    `json:"removed_in_class,omitempty"`
}

// PathDoc is a surviving path and its protection.
type PathDoc struct {
	Src        string   `json:"src"`
	Dst        string   `json:"dst"`
	Switches   []string `json:"switches"`
	PPER       float64  `json:"pper"`
	Protection string   `json:"protection"`
	ParityN    int      `json:"parity_n,omitempty"`
	Copies     int      `json:"copies,omitempty"`
	Residual   float64  `json:"residual_loss"`
}

func (st *run) export(rc *o.RunContext) error {
	net := st.in.net
	removedIn := map[int]int{}
	for _, c := range st.classes {
		for _, rm := range c.Removed {
			removedIn[rm.Link] = c.Index
		}
	}
	doc := ClassesDoc{Format: "testbed.rail-classes/v1", RunID: rc.RunID, LinksFile: st.in.file, LinksSHA256: st.in.sha256,
		Estimate: st.in.estimate, TargetLoss: st.target}
	for k, c := range st.classes {
		cd := ClassDoc{Class: c.Index, Bound: c.Bound, Prefix: st.prefix[k], Links: []LinkDoc{}, Excluded: []LinkDoc{}, Paths: []PathDoc{}}
		if c.Found {
			w := c.Worst.PPER
			cd.WorstPPER, cd.WorstPath = &w, c.Worst.Switches
		}
		for i, l := range net.Links {
			ld := LinkDoc{Link: l.Name, A: l.A, APort: l.APort, B: l.B, BPort: l.BPort}
			if c.Alive[i] {
				cd.Links = append(cd.Links, ld)
			} else {
				ld.RemovedInClass = removedIn[i]
				cd.Excluded = append(cd.Excluded, ld)
			}
		}
		for _, pp := range st.all {
			for _, p := range pp.Paths {
				pr, ok := st.prot[protKey(c.Index, p)]
				if !ok {
					continue
				}
				cd.Paths = append(cd.Paths, PathDoc{Src: pp.Src, Dst: pp.Dst, Switches: p.Switches, PPER: p.PPER, Protection: pr.Kind,
					ParityN: pr.N, Copies: pr.Copies, Residual: pr.Residual})
			}
		}
		doc.Classes = append(doc.Classes, cd)
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := rc.WriteDataFile(results.DataFile{Path: "rail/classes.json", Mediatype: "application/json",
		Description: "RAIL virtual topologies for a controller: per class its bound, address block, links, excluded links and paths with their coding"}, append(b, '\n')); err != nil {
		return err
	}
	confs := st.frr(rc.RunID)
	sws := make([]string, 0, len(confs))
	for sw := range confs {
		sws = append(sws, sw)
	}
	sort.Strings(sws)
	for _, sw := range sws {
		conf := confs[sw]
		if err := rc.WriteDataFile(results.DataFile{Path: "rail/frr/" + sw + ".conf", Mediatype: "text/plain",
			Description: "FRR prefix-lists and route-maps for " + sw + ": each class's block is not announced over the links the class excludes"}, []byte(conf)); err != nil {
			return err
		}
	}
	return nil
}

// frr writes, per switch, the FRR configuration that keeps each class's
// routes off the links the class excludes (RAIL §5.2: "configure BGP to not
// announce prefixes for a virtual topology over links that are not part of
// it"). Route-maps are named after the port the BGP session runs over
// (unnumbered BGP on the fabric port, as RFC 7938 fabrics run FRR), so
// each is attached with one line the switch's own router bgp block holds.
func (st *run) frr(runID string) map[string]string {
	net := st.in.net
	type port struct {
		name, peer, link string
		classes          []int
	}
	ports := map[string][]*port{}
	for i, l := range net.Links {
		var out []int
		for _, c := range st.classes {
			if !c.Alive[i] {
				out = append(out, c.Index)
			}
		}
		for _, end := range [][3]string{{l.A, l.APort, l.B}, {l.B, l.BPort, l.A}} {
			name := end[1]
			if name == "" {
				name = "to-" + end[2]
			}
			ports[end[0]] = append(ports[end[0]], &port{name: name, peer: end[2], link: l.Name, classes: out})
		}
	}
	conf := map[string]string{}
	for sw, ps := range ports {
		sort.Slice(ps, func(i, j int) bool { return ps[i].name < ps[j].name })
		var b strings.Builder
		fmt.Fprintf(&b, "! RAIL virtual topologies: route filters for %s\n! from rail-topology run %s, links file %s (sha256 %s), %s LPER estimates\n!\n",
			sw, runID, st.in.file, st.in.sha256, st.in.estimate)
		for k, c := range st.classes {
			fmt.Fprintf(&b, "! class %d: paths with PPER <= %g\nip prefix-list RAIL-CLASS-%d seq 5 permit %s le 32\n", c.Index, c.Bound, c.Index, st.prefix[k])
		}
		b.WriteString("!\n")
		var attach []string
		for _, p := range ps {
			if len(p.classes) == 0 {
				continue
			}
			fmt.Fprintf(&b, "! port %s to %s (link %s): out of class(es) %s\n", p.name, p.peer, p.link, joinInts(p.classes))
			for j, k := range p.classes {
				fmt.Fprintf(&b, "route-map RAIL-OUT-%s deny %d\n match ip address prefix-list RAIL-CLASS-%d\n", p.name, 10*(j+1), k)
			}
			fmt.Fprintf(&b, "route-map RAIL-OUT-%s permit 1000\n!\n", p.name)
			attach = append(attach, fmt.Sprintf("!   neighbor %s route-map RAIL-OUT-%s out", p.name, p.name))
		}
		if len(attach) == 0 {
			b.WriteString("! no link of this switch is excluded from any class\n")
		} else {
			b.WriteString("! attach in this switch's router bgp block, address-family ipv4 unicast:\n")
			b.WriteString(strings.Join(attach, "\n") + "\n")
		}
		conf[sw] = b.String()
	}
	return conf
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}
