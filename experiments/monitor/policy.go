package monitor

import (
	"fmt"
	"math"
	"time"

	lg "testbed/p4/linkguardian"
)

// Action is what a decision does.
type Action string

// Actions. LinkGuardian protects one direction (its sender runs on the
// upstream switch); disabling takes the whole link down.
const (
	ActEnableLG     Action = "linkguardian_enable"
	ActRaiseCopies  Action = "linkguardian_raise_copies"
	ActDisableLG    Action = "linkguardian_disable"
	ActProposeDown  Action = "link_disable_proposed"
	ActDisableLink  Action = "link_disable"
	ActRefuseDown   Action = "link_disable_refused"
	ActWithdrawDown Action = "link_disable_withdrawn"
)

// PolicyConfig is the policy of one lab (the same for every link).
type PolicyConfig struct {
	// TargetLoss is the effective loss LinkGuardian must bring a
	// corrupting direction down to (Eq. 2); zero disables LinkGuardian.
	TargetLoss float64
	// MaxCopies caps the copies (the multicast groups the deploy step
	// created); zero means no cap.
	MaxCopies int
	// ProposeDisable asks CorrOpt's checker whether a corrupting link may
	// go down, and proposes it when it may.
	ProposeDisable bool
	// AutoDisable takes the link down instead of proposing it. Off unless
	// an operator says so.
	AutoDisable bool
	// MinPathFraction is CorrOpt's capacity constraint: the fraction of
	// its up-paths to the spine every ToR keeps.
	MinPathFraction float64
}

// DefaultPolicy protects to 1e-9 effective loss (LinkGuardian's
// evaluation brings 1e-3 links below it with 2 copies) and proposes
// disabling while every ToR keeps 75% of its paths (CorrOpt's evaluation
// uses 50-75%).
func DefaultPolicy() PolicyConfig {
	return PolicyConfig{TargetLoss: 1e-9, ProposeDisable: true, MinPathFraction: 0.75}
}

// Evidence is what a decision rests on.
type Evidence struct {
	State     State      `json:"state"`
	Reason    string     `json:"reason"`
	Frames    uint64     `json:"frames"`
	Losses    uint64     `json:"losses"`
	Rate      float64    `json:"rate"`
	Low       float64    `json:"low"`
	High      float64    `json:"high"`
	Threshold float64    `json:"threshold"`
	Capacity  *Capacity  `json:"capacity,omitempty"`
	FEC       *FECStatus `json:"fec,omitempty"`
}

// Decision is one thing the monitor does or proposes, with its evidence.
type Decision struct {
	At        time.Time `json:"at"`
	Link      string    `json:"link"`
	Direction string    `json:"direction"` // "a>b" or "b>a" of the inventory link
	Sender    string    `json:"sender"`    // the switch the direction leaves
	Action    Action    `json:"action"`
	Copies    int       `json:"copies,omitempty"`
	Rule      string    `json:"rule"`
	FECMode   string    `json:"fec_mode,omitempty"` // proposed FEC mode
	Evidence  Evidence  `json:"evidence"`
	// Outcome is what became of the decision (Outcome* in act.go), and
	// Error why, when it failed or waits.
	Outcome string `json:"outcome,omitempty"`
	Error   string `json:"error,omitempty"`
}

// Dir names one direction of an inventory link.
type Dir struct {
	Link      string
	Direction string
	Sender    string
}

// Policy turns each direction's status into decisions. It remembers what it
// decided (copies in force, links proposed or down), so a state yields a
// decision once; Forget undoes that memory when an action failed. It is not
// safe for concurrent use.
type Policy struct {
	cfg       PolicyConfig
	threshold float64
	topo      *Topology
	copies    map[Dir]int
	down      map[string]bool // disabled
	proposed  map[string]bool // proposed or refused, this episode
	// fecProposed: a stronger FEC was proposed this episode.
	fecProposed map[Dir]bool
}

// NewPolicy checks cfg. topo may be nil when ProposeDisable is off.
func NewPolicy(cfg PolicyConfig, threshold float64, topo *Topology) (*Policy, error) {
	if cfg.TargetLoss != 0 && !(cfg.TargetLoss > 0 && cfg.TargetLoss < threshold) {
		return nil, fmt.Errorf("policy: target loss %g must lie in (0, threshold %g)", cfg.TargetLoss, threshold)
	}
	if cfg.MaxCopies < 0 {
		return nil, fmt.Errorf("policy: negative max copies %d", cfg.MaxCopies)
	}
	if cfg.ProposeDisable || cfg.AutoDisable {
		if topo == nil {
			return nil, fmt.Errorf("policy: disabling links needs the topology (role options tor|agg|core)")
		}
		if !(cfg.MinPathFraction > 0 && cfg.MinPathFraction <= 1) {
			return nil, fmt.Errorf("policy: min path fraction %g not in (0, 1]", cfg.MinPathFraction)
		}
	}
	return &Policy{cfg: cfg, threshold: threshold, topo: topo, copies: map[Dir]int{}, down: map[string]bool{}, proposed: map[string]bool{}, fecProposed: map[Dir]bool{}}, nil
}

// Copies is the number of copies in force on a direction (0: off).
func (p *Policy) Copies(d Dir) int { return p.copies[d] }

// Down reports whether the policy took a link down.
func (p *Policy) Down(link string) bool { return p.down[link] }

// Forget undoes the policy's memory of a decision that was not carried
// out, so the next status decides again.
func (p *Policy) Forget(d Decision) {
	dir := Dir{d.Link, d.Direction, d.Sender}
	switch d.Action {
	case ActEnableLG:
		delete(p.copies, dir)
	case ActRaiseCopies:
		// The copies before the raise are unknown here; ask again from
		// the smallest protection.
		p.copies[dir] = 1
	case ActDisableLG:
		p.copies[dir] = d.Copies
	case ActDisableLink:
		delete(p.down, d.Link)
		delete(p.proposed, d.Link)
	case ActProposeDown, ActRefuseDown:
		delete(p.proposed, d.Link)
	case ActProposeFEC:
		delete(p.fecProposed, dir)
	}
}

func (p *Policy) evidence(st Status) Evidence {
	return Evidence{State: st.State, Reason: st.Reason, Frames: st.Frames, Losses: st.Losses, Rate: st.Rate,
		Low: st.Low, High: st.High, Threshold: p.threshold}
}

// copiesFor is Eq. 2 at the interval's upper bound: the protection holds
// the target unless the rate is above the bound (2.5% at 95%).
func (p *Policy) copiesFor(high float64) (n int, rule string) {
	actual := math.Min(high, 0.5)
	n, err := lg.Copies(p.cfg.TargetLoss, actual)
	if err != nil {
		n = 1
	}
	rule = fmt.Sprintf("Eq. 2 at the upper bound %.3g: N = ceil(log(%g)/log(%.3g) - 1) = %d", actual, p.cfg.TargetLoss, actual, n)
	if p.cfg.MaxCopies > 0 && n > p.cfg.MaxCopies {
		rule += fmt.Sprintf(", capped at %d (target not met)", p.cfg.MaxCopies)
		n = p.cfg.MaxCopies
	}
	return n, rule
}

// Decide takes a direction's latest status and returns what to do.
func (p *Policy) Decide(d Dir, st Status) []Decision {
	mk := func(a Action, copies int, rule string) Decision {
		return Decision{At: st.At, Link: d.Link, Direction: d.Direction, Sender: d.Sender, Action: a, Copies: copies, Rule: rule, Evidence: p.evidence(st)}
	}
	var out []Decision
	switch st.State {
	case Corrupting:
		if p.cfg.TargetLoss > 0 {
			n, rule := p.copiesFor(st.High)
			switch cur := p.copies[d]; {
			case cur == 0:
				p.copies[d] = n
				out = append(out, mk(ActEnableLG, n, fmt.Sprintf("lower bound %.3g above threshold %g; %s", st.Low, p.threshold, rule)))
			case n > cur:
				p.copies[d] = n
				out = append(out, mk(ActRaiseCopies, n, fmt.Sprintf("rate grew: %s, was %d", rule, cur)))
			}
		}
		if (p.cfg.ProposeDisable || p.cfg.AutoDisable) && !p.proposed[d.Link] && !p.down[d.Link] && p.topo.Has(d.Link) {
			p.proposed[d.Link] = true
			ok, worst, err := p.topo.Check(p.down, d.Link, p.cfg.MinPathFraction)
			rule := fmt.Sprintf("CorrOpt: every ToR losing paths keeps at least %g of its paths to the spine", p.cfg.MinPathFraction)
			var dec Decision
			switch {
			case err != nil:
				dec = mk(ActRefuseDown, 0, err.Error())
			case !ok:
				dec = mk(ActRefuseDown, 0, fmt.Sprintf("%s: %s would keep %.3g", rule, worst.ToR, worst.Fraction))
			case p.cfg.AutoDisable:
				p.down[d.Link] = true
				dec = mk(ActDisableLink, 0, rule+" (automatic disabling configured)")
			default:
				dec = mk(ActProposeDown, 0, rule+"; an operator disables it")
			}
			if worst.ToR != "" {
				w := worst
				dec.Evidence.Capacity = &w
			}
			out = append(out, dec)
		}
	case Clean:
		if cur := p.copies[d]; cur > 0 && st.Changed {
			delete(p.copies, d)
			out = append(out, mk(ActDisableLG, cur, "clean after the quiet period: "+st.Reason))
		}
		if st.Changed && p.proposed[d.Link] && !p.down[d.Link] {
			delete(p.proposed, d.Link)
			out = append(out, mk(ActWithdrawDown, 0, "clean after the quiet period: proposal withdrawn"))
		}
	}
	return out
}
