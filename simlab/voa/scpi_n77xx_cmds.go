package voa

import (
	"math"
	"strings"
	"testbed/simlab/world"

	"testbed/simlab/wire/scpi"
)

// The N776xA's command table on the shared SCPI core. Every detail is from
// the Keysight N77xx Series Programming Guide (N7744-90C, edition 7, March
// 2015), cited by its section:
//
//   - Slots ("Slot and Channel Numbers"): each attenuator occupies two
//     slot numbers and every command is valid for either: the N7761A's
//     attenuator is slots 1-2, the N7762A's and N7766A's two are 1-2 and
//     3-4, the N7764A's and N7768A's four are 1-2, 3-4, 5-6 and 7-8. No
//     slot number means slot 1. A slot the instrument does not have is
//     -303 "Module slot empty or slot / channel invalid" ("Error Codes";
//     -114 is in its list of strings the instrument never reports).
//   - :INPut[n][:CHANnel[m]]:ATTenuation <value>[dB]|MIN|DEF|MAX and its
//     query with MIN|DEF|MAX; a = a_filter + a_offset; DEF is the value at
//     a_filter = 0 dB. :ATTenuation:SPEed, :OFFSet (-200..+200 dB, DEF 0),
//     :WAVelength <value>[PM|NM|UM|MM|M] (metres without a unit, answered
//     in metres) ("The INPut subtree").
//   - :OUTPut[n][:CHANnel[m]][:STATe] OFF(0)|ON(1) is the shutter;
//     :OUTPut[n][:CHANnel[m]]:POWer:UNit DBM(0)|WATT(1) the power unit of
//     the built-in monitor ("The OUTput subtree"). The :SENSe form of the
//     unit is the power meters' (N774xA, N775xA), not the N776xA's.
//   - :FETCh[n][:CHANnel[m]][:SCALar]:POWer[:DC]? and :READ...? read the
//     monitor ("The FETCh subtree", "The READ subtree").
//   - :SYSTem:VERSion? answers the SCPI revision, 1990.0 in the guide's
//     example ("The SYSTem Subsystem").
//   - *OPC? answers 1 if operations are complete and 0 otherwise, at once;
//     *RST clears the error queue and loads the default settings
//     (attenuation, offset, wavelength, speed, shutter closed, power unit
//     dBm); the shutter is closed after power-on unless
//     :OUTPut:STATe:APOWeron was saved ON ("Common Status Command
//     Summary", "Other Common Commands", :OUTPut:STATe:APOWeron).

// n77xxSlotError is the instrument's answer to a slot it does not have.
var n77xxSlotError = scpi.Error{Code: -303, Msg: "Module slot empty or slot / channel invalid"}

// keysightSpeedLimits bounds :INP:ATT:SPE (dB/s): 0.1 to 1000 dB/s, and
// DEF is the speed the channel powers on with, which *RST restores (one
// value for both, so ":INP1:ATT:SPE? DEF" reads what *RST loaded; a
// simulated channel faster than 1000 dB/s raises the maximum to its own).
func keysightSpeedLimits(powerOn float64) scpi.Limits {
	return scpi.Limits{Min: 0.1, Max: max(1000, powerOn), Def: powerOn}
}

// keysightWavelength bounds :INP:WAV (metres).
var keysightWavelength = scpi.Limits{Min: 1200e-9, Max: 1700e-9, Def: 1550e-9}

// keysightOffset bounds :INP:OFFS (dB).
var keysightOffset = scpi.Limits{Min: -200, Max: 200, Def: 0}

// newKeysightSCPI builds the instrument's SCPI state over the server's VOA.
func newKeysightSCPI(s *KeysightServer) *scpi.Instrument {
	v := s.voa
	k := &keysightCmds{s: s, defSpeed: make([]float64, len(v.Channels))}
	for i, ch := range v.Channels {
		k.defSpeed[i] = ch.Speed()
	}
	// Every header of the table takes one parameter at most (the value,
	// or a query's MIN|MAX|DEF): ":INP1:ATT 5,6" is -108.
	table := []scpi.Command{
		{Pattern: ":INPut#[:CHANnel#]:ATTenuation", Set: k.setAttenuation, Get: k.attenuation},
		k.setting(":INPut#[:CHANnel#]:ATTenuation:SPEed", scpi.DBPerSecond,
			func(i int) scpi.Limits { return keysightSpeedLimits(k.defSpeed[i]) },
			(*world.VOAChannel).SetSpeed, (*world.VOAChannel).Speed),
		k.setting(":INPut#[:CHANnel#]:OFFSet", scpi.DB,
			func(int) scpi.Limits { return keysightOffset },
			(*world.VOAChannel).SetOffset, (*world.VOAChannel).Offset),
		k.setting(":INPut#[:CHANnel#]:WAVelength", scpi.Metre,
			func(int) scpi.Limits { return keysightWavelength },
			(*world.VOAChannel).SetWavelength, (*world.VOAChannel).Wavelength),
		{Pattern: ":OUTPut#[:CHANnel#][:STATe]", Set: k.setShutter, Get: k.shutter},
		{Pattern: ":OUTPut#[:CHANnel#]:POWer:UNit", Set: k.setPowerUnit, Get: k.powerUnit},
		{Pattern: ":FETCh#[:CHANnel#][:SCALar]:POWer[:DC]", Get: k.power},
		{Pattern: ":READ#[:CHANnel#][:SCALar]:POWer[:DC]", Get: func(c *scpi.Call) (string, error) {
			s.waitSettled()
			return k.power(c)
		}},
		{Pattern: ":SYSTem:VERSion", Get: func(*scpi.Call) (string, error) { return "1990.0", nil }},
	}
	for i := range table {
		table[i].Params = 1
	}
	return scpi.New(scpi.Config{
		IDN:   v.Vendor + "," + v.Model + "," + v.Serial + "," + v.Firmware,
		Reset: k.reset,
		Pending: func() bool {
			for _, ch := range v.Channels {
				if ch.SettleTime() > 0 {
					return true
				}
			}
			return false
		},
		Wait: s.waitSettled,
	}, table)
}

// keysightCmds are the N776xA's commands over the server's VOA.
type keysightCmds struct {
	s *KeysightServer
	// defSpeed is each channel's speed at power-on, which *RST restores.
	defSpeed []float64
}

// reset loads the default settings (*RST): minimum attenuation, no
// offset, 1550 nm, the power-on speed, shutter closed, power in dBm.
func (k *keysightCmds) reset() {
	k.s.mu.Lock()
	k.s.unitW = map[int]bool{}
	k.s.mu.Unlock()
	for i, ch := range k.s.voa.Channels {
		ch.SetAttenuation(ch.MinDB)
		ch.SetOffset(0)
		ch.SetWavelength(keysightWavelength.Def)
		ch.SetSpeed(k.defSpeed[i])
		ch.SetShutter(false)
	}
}

// chanOf maps the slot of a call to the attenuator channel (index 0 =
// the first attenuator).
func (k *keysightCmds) chanOf(c *scpi.Call) (int, *world.VOAChannel, error) {
	slot := c.N(0)
	if slot < 1 || slot > 2*len(k.s.voa.Channels) {
		e := n77xxSlotError
		return 0, nil, &e
	}
	i := (slot - 1) / 2
	return i, k.s.voa.Channels[i], nil
}

// attLimits bounds a channel's attenuation as set and read: its filter's
// range shifted by the offset.
func attLimits(ch *world.VOAChannel) scpi.Limits {
	off := ch.Offset()
	return scpi.Limits{Min: ch.MinDB + off, Max: ch.MaxDB + off, Def: ch.MinDB + off}
}

// setAttenuation sets a = a_filter + a_offset (an injected device error
// answers first).
func (k *keysightCmds) setAttenuation(c *scpi.Call) (string, error) {
	_, ch, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	if f, hit := k.s.faults.TakeFailure(); hit {
		return "", &scpi.Error{Code: f.Code, Msg: f.Message}
	}
	v, err := scpi.Number(c.Arg(0), scpi.DB, attLimits(ch))
	if err != nil {
		return "", err
	}
	ch.SetAttenuation(v - ch.Offset())
	return "", nil
}

func (k *keysightCmds) attenuation(c *scpi.Call) (string, error) {
	_, ch, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	if v, ok, err := scpi.QueryLimit(c, attLimits(ch)); ok || err != nil {
		return scpi.Float(v), err
	}
	return scpi.Float(ch.Attenuation() + ch.Offset()), nil
}

// setting is the command of a channel's numeric setting: set within the
// limits of channel index i, in units; queried as is or as its MIN|MAX|DEF.
func (k *keysightCmds) setting(pattern string, units scpi.Units, limits func(i int) scpi.Limits,
	set func(*world.VOAChannel, float64), get func(*world.VOAChannel) float64) scpi.Command {
	return scpi.Command{Pattern: pattern,
		Set: func(c *scpi.Call) (string, error) {
			i, ch, err := k.chanOf(c)
			if err != nil {
				return "", err
			}
			v, err := scpi.Number(c.Arg(0), units, limits(i))
			if err != nil {
				return "", err
			}
			set(ch, v)
			return "", nil
		},
		Get: func(c *scpi.Call) (string, error) {
			i, ch, err := k.chanOf(c)
			if err != nil {
				return "", err
			}
			if v, ok, err := scpi.QueryLimit(c, limits(i)); ok || err != nil {
				return scpi.Float(v), err
			}
			return scpi.Float(get(ch)), nil
		}}
}

func bool01(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func (k *keysightCmds) setShutter(c *scpi.Call) (string, error) {
	_, ch, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	open, err := scpi.Bool(c.Arg(0))
	if err != nil {
		return "", err
	}
	ch.SetShutter(open)
	return "", nil
}

func (k *keysightCmds) shutter(c *scpi.Call) (string, error) {
	_, ch, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	return bool01(ch.Shutter()), nil
}

// setPowerUnit sets the monitor's unit: DBM (0) or WATT (1).
func (k *keysightCmds) setPowerUnit(c *scpi.Call) (string, error) {
	i, _, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	var watts bool
	switch a := c.Arg(0); {
	case a == "0" || strings.EqualFold(a, "DBM"):
	case a == "1" || strings.EqualFold(a, "WATT") || strings.EqualFold(a, "W"):
		watts = true
	case a == "":
		return "", scpi.Errorf(-109, "")
	default:
		return "", scpi.Errorf(-224, "expected DBM or WATT")
	}
	k.s.mu.Lock()
	k.s.unitW[i] = watts
	k.s.mu.Unlock()
	return "", nil
}

func (k *keysightCmds) powerUnit(c *scpi.Call) (string, error) {
	i, _, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	k.s.mu.Lock()
	defer k.s.mu.Unlock()
	return bool01(k.s.unitW[i]), nil
}

// power reads the channel's built-in monitor in its unit.
func (k *keysightCmds) power(c *scpi.Call) (string, error) {
	i, ch, err := k.chanOf(c)
	if err != nil {
		return "", err
	}
	p := ch.OutputPowerDBm()
	// The monitor's floor: a dark or unlit channel reads noise.
	if math.IsInf(p, -1) || p < -80 {
		p = -80
	}
	k.s.mu.Lock()
	watts := k.s.unitW[i]
	k.s.mu.Unlock()
	if watts {
		return scpi.Float(math.Pow(10, p/10) / 1000), nil
	}
	return scpi.Float(p), nil
}
