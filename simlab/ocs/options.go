package ocs

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"testbed/inventory"
)

// MicroOCSFromDevice builds a microsecond switch's description from its
// inventory entry: options ports, serial, min_slot_us, min_night_us,
// max_slots and the reconfig_* gap law.
func MicroOCSFromDevice(d *inventory.Device) (MicroOCSOptions, error) {
	o := MicroOCSOptions{Vendor: "UC San Diego", Model: "Mordia", Serial: d.Options["serial"], Firmware: "sim-1.0"}
	var err error
	if v := d.Options["ports"]; v != "" {
		if o.Ports, err = strconv.Atoi(v); err != nil || o.Ports < 1 {
			return o, fmt.Errorf("%s: option ports=%q is not a positive integer", d.Name, v)
		}
		o.Model = fmt.Sprintf("Mordia-%d", o.Ports)
	}
	if v := d.Options["max_slots"]; v != "" {
		if o.MaxSlots, err = strconv.Atoi(v); err != nil || o.MaxSlots < 1 {
			return o, fmt.Errorf("%s: option max_slots=%q is not a positive integer", d.Name, v)
		}
	}
	if o.MinSlot, err = optMicros(d.Options, "min_slot_us", 0); err != nil {
		return o, fmt.Errorf("%s: %w", d.Name, err)
	}
	if o.MinNight, err = optMicros(d.Options, "min_night_us", 0); err != nil {
		return o, fmt.Errorf("%s: %w", d.Name, err)
	}
	switch d.Options["reconfig_dist"] {
	case "mordia":
		// The night from its mechanism (reactormodel.Switching); the
		// law's keys do not apply.
		for _, k := range []string{"reconfig_mean_us", "reconfig_sd_us", "reconfig_min_us", "reconfig_max_us"} {
			if _, ok := d.Options[k]; ok {
				return o, fmt.Errorf("%s: option %s: reconfig_dist mordia takes its gap from the mechanism; remove %s or set reconfig_dist truncnormal", d.Name, k, k)
			}
		}
		o.Mechanism = true
		if v := d.Options["temperature_c"]; v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < -40 || f > 85 {
				return o, fmt.Errorf("%s: option temperature_c=%q: expected degrees Celsius within -40..85", d.Name, v)
			}
			o.TempC = f
		}
	default:
		if o.Gap, err = GapFromOptions(d.Options); err != nil {
			return o, fmt.Errorf("%s: %w", d.Name, err)
		}
	}
	return o, nil
}

// PolatisFromDevice builds a millisecond switch's description from its
// inventory entry: options ports ("16x16"), serial, switch_time_ms.
func PolatisFromDevice(d *inventory.Device) (PolatisOptions, error) {
	o := PolatisOptions{Serial: d.Options["serial"], Firmware: "6.5.2-sim"}
	if v := d.Options["ports"]; v != "" {
		a, b, ok := strings.Cut(v, "x")
		n, e1 := strconv.Atoi(a)
		m, e2 := strconv.Atoi(b)
		if !ok || e1 != nil || e2 != nil || n < 1 || m < 1 {
			return o, fmt.Errorf("%s: option ports=%q is not <ingress>x<egress>", d.Name, v)
		}
		o.Ingress, o.Egress = n, m
	}
	if v := d.Options["switch_time_ms"]; v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 {
			return o, fmt.Errorf("%s: option switch_time_ms=%q is not a positive number", d.Name, v)
		}
		o.SwitchTime = time.Duration(f * float64(time.Millisecond))
	}
	return o, nil
}
