package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tarm/serial"

	"testbed/inventory"
)

// The checker asks the instruments on their own wire protocols, as a
// person with socat or curl would, not through the testbed's drivers: a
// driver that misreads a device (a shutter it never asks about, a schedule
// state it folds into "stopped") must not hide what a run left behind.
// The switches and hosts are read through their drivers (the switch agent
// and the hostagent).

// readDirect reads a device the checker knows the wire protocol of; it
// reports false for the others.
func readDirect(ctx context.Context, d *inventory.Device, set func(prop, v string)) bool {
	var err error
	switch d.Driver {
	case "keysight-n77xx":
		err = readN77xx(ctx, d, set)
	case "ozoptics-dd100":
		err = readDD100(ctx, d, set)
	case "otg":
		err = readOTG(ctx, d, set)
	case "mordia-rest":
		err = readMordia(ctx, d, set)
	case "polatis-scpi":
		err = readPolatis(ctx, d, set)
	default:
		return false
	}
	if err != nil {
		set("read", "error: "+err.Error())
	}
	return true
}

// scpi is one SCPI conversation over raw TCP (port 5025 on a real
// instrument): a query is a line, its reply one line.
type scpi struct {
	c  net.Conn
	rd *bufio.Reader
}

func dialSCPI(ctx context.Context, address string) (*scpi, error) {
	u, err := url.Parse(address)
	if err != nil || u.Scheme != "tcp" {
		return nil, fmt.Errorf("address %q: expected tcp://host:port", address)
	}
	var dl net.Dialer
	c, err := dl.DialContext(ctx, "tcp", u.Host)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	return &scpi{c: c, rd: bufio.NewReader(c)}, nil
}

func (s *scpi) query(q string) (string, error) {
	if _, err := io.WriteString(s.c, q+"\n"); err != nil {
		return "", err
	}
	l, err := s.rd.ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("%s: %w", q, err)
	}
	return strings.TrimSpace(l), nil
}

// readN77xx: per channel its attenuation and its shutter (N7744-90C:
// :INP<slot>:ATT?, :OUTP<slot>:STAT?; channel c is slot 2c-1).
func readN77xx(ctx context.Context, d *inventory.Device, set func(prop, v string)) error {
	s, err := dialSCPI(ctx, d.Address)
	if err != nil {
		return err
	}
	defer s.c.Close()
	for ch := 1; ch <= max(d.Channels, 1); ch++ {
		slot := 2*ch - 1
		att, err := s.query(fmt.Sprintf(":INP%d:ATT?", slot))
		if err != nil {
			return err
		}
		v, err := strconv.ParseFloat(att, 64)
		if err != nil {
			return fmt.Errorf(":INP%d:ATT? reply %q is not a number", slot, att)
		}
		set(fmt.Sprintf("channel%d", ch), fmt.Sprintf("%.2f", v))
		st, err := s.query(fmt.Sprintf(":OUTP%d:STAT?", slot))
		if err != nil {
			return err
		}
		if w, ok := map[string]string{"1": "open", "0": "closed"}[st]; ok {
			st = w
		}
		set(fmt.Sprintf("shutter%d", ch), st)
	}
	return nil
}

// readDD100: "A?" on the serial line (CR-terminated), replied by
// "Atten:<dB>(dB)" lines, then "Done" (the DD-100-MC manual's protocol).
func readDD100(ctx context.Context, d *inventory.Device, set func(prop, v string)) error {
	u, err := url.Parse(d.Address)
	if err != nil || u.Scheme != "serial" {
		return fmt.Errorf("address %q: expected serial:///dev/...", d.Address)
	}
	baud := 9600
	if b := u.Query().Get("baud"); b != "" {
		baud, _ = strconv.Atoi(b)
	}
	p, err := serial.OpenPort(&serial.Config{Name: u.Path, Baud: baud, ReadTimeout: 200 * time.Millisecond})
	if err != nil {
		return err
	}
	defer p.Close()
	if _, err := io.WriteString(p, "A?\r"); err != nil {
		return err
	}
	var got []byte
	buf := make([]byte, 256)
	for !bytes.Contains(got, []byte("Done")) {
		if ctx.Err() != nil {
			return fmt.Errorf("A?: no Done after %q", got)
		}
		n, _ := p.Read(buf)
		got = append(got, buf[:n]...)
	}
	for _, l := range strings.FieldsFunc(string(got), func(r rune) bool { return r == '\r' || r == '\n' }) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Atten:"); ok {
			f, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), "(dB)"), 64)
			if err != nil {
				return fmt.Errorf("A? reply %q", l)
			}
			set("channel1", fmt.Sprintf("%.2f", f))
			return nil
		}
	}
	return fmt.Errorf("A? reply %q has no Atten:", got)
}

func httpJSON(ctx context.Context, method, url string, body any, out any) error {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: %s: %s", method, url, resp.Status, bytes.TrimSpace(b))
	}
	return json.Unmarshal(b, out)
}

// readOTG: the flows transmitting (OTG's POST /monitor/metrics, choice flow).
func readOTG(ctx context.Context, d *inventory.Device, set func(prop, v string)) error {
	var resp struct {
		FlowMetrics []struct {
			Transmit string `json:"transmit"`
		} `json:"flow_metrics"`
	}
	req := map[string]any{"choice": "flow", "flow": map[string]any{"flow_names": []string{}}}
	if err := httpJSON(ctx, "POST", strings.TrimSuffix(d.Address, "/")+"/monitor/metrics", req, &resp); err != nil {
		return err
	}
	started := 0
	for _, f := range resp.FlowMetrics {
		if f.Transmit == "started" {
			started++
		}
	}
	set("flows_transmitting", fmt.Sprint(started))
	return nil
}

// readMordia: the circuits up and the schedule's state as the switch
// says it (idle, loaded, armed, running) with its slots
// (instruments/ocs/openapi.yaml: GET /v1/configuration, GET /v1/schedule).
func readMordia(ctx context.Context, d *inventory.Device, set func(prop, v string)) error {
	base := strings.TrimSuffix(d.Address, "/")
	var conf struct {
		Circuits []json.RawMessage `json:"circuits"`
	}
	if err := httpJSON(ctx, "GET", base+"/v1/configuration", nil, &conf); err != nil {
		return err
	}
	set("circuits", fmt.Sprint(len(conf.Circuits)))
	var st struct {
		State    string `json:"state"`
		Schedule *struct {
			Slots []json.RawMessage `json:"slots"`
		} `json:"schedule"`
	}
	if err := httpJSON(ctx, "GET", base+"/v1/schedule", nil, &st); err != nil {
		return err
	}
	slots := 0
	if st.Schedule != nil {
		slots = len(st.Schedule.Slots)
	}
	set("schedule", fmt.Sprintf("%s, %d slots", st.State, slots))
	return nil
}

// readPolatis: the connection list (:oxc:swit:conn:stat?) over SCPI.
func readPolatis(ctx context.Context, d *inventory.Device, set func(prop, v string)) error {
	s, err := dialSCPI(ctx, d.Address)
	if err != nil {
		return err
	}
	defer s.c.Close()
	v, err := s.query(":oxc:swit:conn:stat?")
	if err != nil {
		return err
	}
	set("connections", v)
	return nil
}
