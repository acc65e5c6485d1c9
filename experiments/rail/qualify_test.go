package rail_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"testbed/experiments/rail"
	"testbed/experiments/rail/topo"
	"testbed/experiments/recipetest"
	"testbed/orchestrator"
	"testbed/simlab"
)

var fronts = "front_ports=sw1:p1=1,sw1:p2=2,sw2:p1=1,sw2:p2=2"

// On the simulated lab, with lg25's VOA (on its sw1 -> sw2 fibre) turned up
// as a dirty connector would: the diagnostics show the extra attenuation in
// that direction only, the line-rate test loses frames on lg25 and none on
// lg100, and the link table reads back as rail-topology's input.
func TestQualifyOnTheSimulatedLab(t *testing.T) {
	lab := recipetest.StartLab(t, 5)
	voa, ok := lab.World().VOA("voa3")
	if !ok {
		t.Fatal("no voa3 in the simulated lab")
	}
	voa.Channels[0].SetAttenuation(8) // lg25
	time.Sleep(voa.Channels[0].SettleTime())
	var s rail.QualifySummary
	res := recipetest.Run(t, lab, rail.NewQualify(), 5, &s, nil, "seconds=0.2", fronts)
	if s.Partial {
		t.Fatalf("partial: %s", res.Reason)
	}
	g25, g100 := s.Links["lg25"], s.Links["lg100"]
	if g25.AttenuationABDB == nil || g100.AttenuationABDB == nil || g25.AsymmetryDB == nil {
		t.Fatalf("diagnostics not read: %+v %+v", g25, g100)
	}
	// The VOA's 8 dB (and its insertion loss) are in a -> b only.
	if d := *g25.AttenuationABDB - *g100.AttenuationABDB; d < 7.5 || d > 8.5 {
		t.Errorf("lg25 a->b %.2f dB, lg100 %.2f dB: the 8 dB do not show", *g25.AttenuationABDB, *g100.AttenuationABDB)
	}
	if *g25.AttenuationBADB != *g100.AttenuationBADB || *g100.AsymmetryDB <= 0 {
		t.Errorf("return attenuations %v %v, lg100 asymmetry %v", *g25.AttenuationBADB, *g100.AttenuationBADB, *g100.AsymmetryDB)
	}
	if g25.FramesLost == 0 || g25.Health == "good" || g25.LPERLow <= 0 {
		t.Errorf("lg25 at 8 dB extra lost nothing: %+v", g25)
	}
	if g100.FramesLost != 0 || g100.FramesSent < 1_000_000 {
		t.Errorf("lg100 at rest: %+v", g100)
	}
	f, err := os.Open(filepath.Join(res.Dir, "data", "links.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tab, err := topo.ReadTable("links.csv", f)
	if err != nil {
		t.Fatal(err)
	}
	// b -> a is tested too: the return fibre has no VOA, so lg25 loses
	// nothing that way.
	if len(tab.Links) != 2 || tab.Links[1].Name != "lg25" || tab.Links[1].AB.Lost != g25.FramesLost || tab.Links[1].BA.Frames != g25.FramesSentBA ||
		g25.FramesSentBA == 0 || tab.Links[1].BA.Lost != 0 {
		t.Errorf("link table %+v", tab.Links[1])
	}
	rows := recipetest.ReadTable(t, res.Dir, "lper")
	if len(rows) != 4 {
		t.Fatalf("lper rows %v", rows)
	}
	for _, r := range rows {
		sent, _ := strconv.ParseInt(r["frames_sent"], 10, 64)
		del, _ := strconv.ParseInt(r["frames_delivered"], 10, 64)
		if lost, _ := strconv.ParseInt(r["frames_lost"], 10, 64); lost != sent-del {
			t.Errorf("row %v: lost is not sent - delivered", r)
		}
	}
}

func TestQualifyRefusesBadFrontPorts(t *testing.T) {
	r := rail.NewQualify()
	for _, fp := range []string{"front_ports=sw1:p1", "front_ports=sw1=1", "front_ports=sw1:p1=x"} {
		params, err := orchestrator.ResolveParams(r.Meta().Params, "", nil, []string{fp})
		if err != nil {
			t.Fatal(err)
		}
		_, err = r.Plan(&orchestrator.PlanContext{Params: params, Lab: simlab.DefaultInventory(), Simulated: true})
		if err == nil || !strings.Contains(err.Error(), "expected device:port=number") {
			t.Errorf("%s: %v", fp, err)
		}
	}
}
