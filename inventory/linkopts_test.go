package inventory

import (
	"math"
	"strings"
	"testing"
)

func TestLinkOptionsOpticalBudget(t *testing.T) {
	text := strings.Replace(good, "    loss_after_voa_db: 0.5\n",
		"    options: {fibre_length_m: \"400\", fibre_type: OM3, loss_before_voa_db: \"2.25\", loss_after_voa_db: \"0.75\"}\n", 1)
	inv, err := Load(write(t, "lab.yaml", text))
	if err != nil {
		t.Fatal(err)
	}
	l, _ := inv.Link("l25g")
	if l.FibreLengthM != 400 || l.FibreType != "OM3" || l.LossBeforeVOADB == nil || *l.LossBeforeVOADB != 2.25 || l.LossAfterVOADB != 0.75 {
		t.Fatalf("link: %+v", l)
	}
	// 400 m of OM3 at 3.5 dB/km (IEEE 802.3 multimode budgets) is 1.4 dB.
	before, after := l.Budget(1, 0.5)
	if before != 2.25 || math.Abs(after-(0.75+1.4)) > 1e-9 {
		t.Errorf("budget %v, %v dB; want 2.25, 2.15", before, after)
	}
	// Written out and read back, the options say the same once.
	data, err := inv.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(data), "loss_after_voa_db") != 1 {
		t.Errorf("loss_after_voa_db written other than once:\n%s", data)
	}
	back, err := Parse("back.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	bl, _ := back.Link("l25g")
	if b2, a2 := bl.Budget(1, 0.5); b2 != before || a2 != after {
		t.Errorf("after a round trip: %v, %v dB; want %v, %v", b2, a2, before, after)
	}
}

func TestLinkBudgetDefaults(t *testing.T) {
	l := &Link{}
	if b, a := l.Budget(1, 0.5); b != 1 || a != 0.5 {
		t.Errorf("no options: %v, %v; want the defaults 1, 0.5", b, a)
	}
	// A length alone runs over OM4; a zero loss given is zero, not the default.
	inv, err := Load(write(t, "lab.yaml", strings.Replace(good, "    loss_after_voa_db: 0.5\n",
		"    options: {fibre_length_m: \"1000\", loss_before_voa_db: \"0\", loss_after_voa_db: \"0\"}\n", 1)))
	if err != nil {
		t.Fatal(err)
	}
	l, _ = inv.Link("l25g")
	if b, a := l.Budget(1, 0.5); b != 0 || a != 3.5 {
		t.Errorf("1 km of OM4, no connectors: %v, %v; want 0, 3.5", b, a)
	}
	if FibreTypes()["OS2"].DBPerKm != 0.4 {
		t.Errorf("OS2: %v dB/km, want 0.4 (G.652.D at 1310 nm)", FibreTypes()["OS2"].DBPerKm)
	}
}

func TestLinkOptionsNameFileLineAndField(t *testing.T) {
	cases := []struct{ name, repl, want string }{
		{"unknown", "options: {fibre_colour: blue}", `lab.yaml:30:15: links[0].options.fibre_colour: unknown link option "fibre_colour"`},
		{"length", "options: {fibre_length_m: far}", `lab.yaml:30:15: links[0].options.fibre_length_m: expected a number of metres, not negative, got "far"`},
		{"negative", `options: {loss_before_voa_db: "-1"}`, `lab.yaml:30:15: links[0].options.loss_before_voa_db: expected a number of dB, not negative`},
		{"type", `options: {fibre_length_m: "10", fibre_type: OM5}`, `lab.yaml:30:37: links[0].options.fibre_type: fibre type "OM5" is not one of OM3, OM4, OS2`},
		{"mode", `options: {fibre_length_m: "10", fibre_type: OS2}`, `lab.yaml:30:37: links[0].options.fibre_type: 25GBASE-SR runs on multimode (OM3, OM4) fibre, not OS2`},
		{"typeonly", `options: {fibre_type: OM4}`, `links[0].options.fibre_type: fibre_type without fibre_length_m`},
		{"twice", `options: {loss_after_voa_db: "0.7"}`, `links[0].options.loss_after_voa_db: loss after the VOA given twice`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text := strings.Replace(good, "    loss_after_voa_db: 0.5\n", "    loss_after_voa_db: 0.5\n    "+c.repl+"\n", 1)
			_, err := Load(write(t, "lab.yaml", text))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, c.want)
			}
		})
	}
}

func TestLinkDataPathOption(t *testing.T) {
	two := good + `  - name: l25g-b
    a: {device: tg1, port: p1}
    b: {device: tg1, port: p2}
    transceiver: 25GBASE-SR
    options: {data_path: "true"}
`
	inv, err := Load(write(t, "lab.yaml", two))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := inv.Link("l25g-b"); !l.DataPath {
		t.Errorf("l25g-b: %+v", l)
	}
	_, err = Load(write(t, "lab.yaml", strings.Replace(two, "    loss_after_voa_db: 0.5\n", "    loss_after_voa_db: 0.5\n    options: {data_path: \"true\"}\n", 1)))
	if err == nil || !strings.Contains(err.Error(), "links[1].options.data_path: link l25g is already the data path from tg1 to tg1") {
		t.Errorf("two data paths: %v", err)
	}
	_, err = Load(write(t, "lab.yaml", strings.Replace(two, `data_path: "true"`, `data_path: maybe`, 1)))
	if err == nil || !strings.Contains(err.Error(), `links[1].options.data_path: expected true or false, got "maybe"`) {
		t.Errorf("bad value: %v", err)
	}
}
