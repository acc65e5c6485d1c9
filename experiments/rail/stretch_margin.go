package rail

import (
	"context"
	"fmt"
	"math"

	"testbed/experiments/lgbench"
	"testbed/experiments/stats"
	o "testbed/orchestrator"
	"testbed/results"
)

// marginTable is RAIL Fig. 11c: LPER against attenuation added with the
// VOA, on one spool per group.
func marginTable() results.Table {
	return results.Table{Name: "margin", Title: "LPER against added attenuation",
		Description: "One row per test of the margin sweep: the group's spool at the standard's reach (else its shortest), the VOA set margin_step_db higher each test from 0 dB until the LPER passes the largest bound.",
		Fields: []results.Field{
			{Name: "link", Type: "string"}, {Name: "transceiver", Type: "string"}, {Name: "fec", Type: "string"}, {Name: "fibre_type", Type: "string"},
			{Name: "length_m", Type: "number", Unit: "m"}, {Name: "added_db", Type: "number", Unit: "dB", Description: "VOA setting above its resting value"},
			{Name: "frames_sent", Type: "integer", Unit: "frames"}, {Name: "frames_lost", Type: "integer", Unit: "frames"},
			{Name: "lper", Type: "number", Unit: "1"}, {Name: "lper_low", Type: "number", Unit: "1"}, {Name: "lper_high", Type: "number", Unit: "1"},
		},
		Figures: []results.Figure{{
			Name: "lper-vs-added-attenuation", Title: "LPER against added attenuation at the standard's reach",
			Caption: "As RAIL Fig. 11c (BER against added attenuation on a fibre at the transceiver's specified reach), in packets. Open markers: no frame lost, drawn at the 95% upper bound.",
			Kind:    results.Line, X: "added_db", Y: "lper", ZeroAt: "lper_high", LogY: true,
			Series: []string{"transceiver", "fec", "fibre_type"}, Legend: "{transceiver} FEC {fec} {fibre_type}, {length_m} m",
			XLabel: "Added attenuation (dB)", YLabel: "Link packet error rate",
		}}}
}

// marginSpool picks a group's spool for the margin sweep: the one at the
// standard's reach, else the shortest.
func marginSpool(links []lgbench.Link, nominal float64, ok bool) lgbench.Link {
	best := links[0]
	for _, l := range links {
		if ok && l.Link.FibreLengthM == nominal {
			return l
		}
		if l.Link.FibreLengthM < best.Link.FibreLengthM {
			best = l
		}
	}
	return best
}

// marginStep sweeps the VOA of one spool up from its resting value, step
// by step, until the LPER passes the largest bound or the sweep reaches
// maxDB; the VOA goes back to rest at the end of the run (undo journal).
func (st *stretchState) marginStep(key [3]string, l lgbench.Link, p *o.Params, fb int, bounds []float64) *o.Step {
	step, maxDB := p.Float("margin_step_db"), p.Float("margin_max_db")
	frames := int64(math.Ceil(p.Float("margin_seconds") * l.LineRateBps / (float64(fb+20) * 8)))
	top := 0.0
	for _, b := range bounds {
		top = max(top, b)
	}
	il := l.Link
	return &o.Step{Name: fmt.Sprintf("%s: margin at %g m", il.Name, il.FibreLengthM), Action: "attenuation-sweep", Devices: []string{l.Sender, l.Receiver, l.VOA},
		Settings: []o.Setting{{Device: l.VOA, Name: fmt.Sprintf("channel %d", l.VOAChannel), Value: fmt.Sprintf("0 to %g dB above rest in %g dB steps, %d frames each", maxDB, step, frames)}},
		Run: func(ctx context.Context, rc *o.RunContext) error {
			bench, err := lgbench.Open(ctx, rc, l, lgbench.OpenOptions(p))
			if err != nil {
				return err
			}
			if err := bench.Protect(ctx, lgbench.Protection{Mode: lgbench.Off}); err != nil {
				return err
			}
			d, _ := rc.Lab.Device(l.VOA)
			rest := 0.0
			if r := o.RestingAttenuation(d); r != nil {
				rest = *r
			}
			t, err := rc.Table("margin")
			if err != nil {
				return err
			}
			// measure one setting; it reports the LPER.
			measure := func(added float64) (float64, error) {
				if err := rc.SetAttenuation(ctx, l.VOA, l.VOAChannel, rest+added); err != nil {
					return 0, err
				}
				s := lgbench.StressFrom(p, fb)
				s.Frames = frames
				res, err := bench.Run(ctx, s)
				if err != nil {
					return 0, err
				}
				if res.Sent == 0 {
					return 0, fmt.Errorf("%s: the packet generator sent no frame on %s", l.Sender, il.Name)
				}
				lost := res.Lost()
				lo, hi := stats.Wilson(lost, res.Sent, stats.Z95)
				lper := float64(lost) / float64(res.Sent)
				if err := t.Write(il.Name, il.Transceiver, l.FEC, key[2], il.FibreLengthM, added, res.Sent, lost, lper, lo, hi); err != nil {
					return 0, err
				}
				rc.Event(results.Event{Type: "measurement", Device: l.VOA, Message: fmt.Sprintf("%s + %.2f dB: LPER %.3g (%d of %d)", il.Name, added, lper, lost, res.Sent),
					Fields: map[string]any{"link": il.Name, "attenuation_db": rest + added, "frames_sent": res.Sent, "frames_lost": lost, "loss_rate": lper}})
				st.mu.Lock()
				st.margins[key] = append(st.margins[key], SpoolPoint{LengthM: added, Sent: res.Sent, Lost: lost})
				st.marginAt[key] = il.FibreLengthM
				st.mu.Unlock()
				return lper, nil
			}
			// Up in steps until the largest bound is passed. A cliff
			// crossed in one step (RS-FEC's is a fraction of a dB) is
			// walked again in fifths of it, so the interpolation has
			// lossy points on it.
			lastClean, lossy := 0.0, 0
			for i := 0; ; i++ {
				added := math.Round(float64(i)*step*1000) / 1000
				if added > maxDB+1e-9 {
					return nil
				}
				lper, err := measure(added)
				if err != nil {
					return err
				}
				if lper == 0 {
					lastClean = added
				} else {
					lossy++
				}
				if lper > top {
					if lossy >= 2 {
						return nil
					}
					for j := 1; j < 5; j++ {
						if _, err := measure(math.Round((lastClean+float64(j)*step/5)*1000) / 1000); err != nil {
							return err
						}
					}
					return nil
				}
			}
		}}
}
