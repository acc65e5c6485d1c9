package tofino

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"testbed/transport"
)

// What the client may do with an operation of agent/PROTOCOL.md whose
// request was written before the connection was lost: the agent may have
// done it before the stream died, so sending it again is only right when a
// repeat leaves the switch as one request would.
type retryClass int

const (
	// retryRead: a read, or a write whose repeat leaves the same state
	// (a set, a modify in place, a clear, a stop): sent again.
	retryRead retryClass = iota + 1
	// retryReadUnless: a read without its argument arg; with it, a write
	// answering the state before it ("previous"), which a repeat would
	// answer with the new state: the outcome is unknown.
	retryReadUnless
	// retryAdd: an add that fails when its object exists. Sent again; a
	// retry answered "already exists" is the first request done when the
	// object read back (reconcile) equals what was sent.
	retryAdd
	// retryDel: a delete that fails when its object is gone. Sent again;
	// a retry answered not_found leaves the object gone, as asked.
	retryDel
	// retryNever: a repeat does it twice (a frame sent, a generator
	// restarted) or loses what the answer carries: the outcome is unknown.
	retryNever
)

type opRetry struct {
	class retryClass
	// arg is the argument that makes a retryReadUnless op a write.
	arg string
	// reconcile reads back what a retryAdd op made and reports whether it
	// equals args.
	reconcile func(ctx context.Context, a *agentClient, args any) (bool, error)
}

// opRetries classifies every operation of agent/PROTOCOL.md (in its order;
// TestEveryProtocolOpHasARetryClass holds the two together).
var opRetries = map[string]opRetry{
	"auth":             {class: retryRead}, // a new connection's first line, never sent by call
	"hello":            {class: retryRead},
	"port.add":         {class: retryAdd, reconcile: reconcilePortAdd},
	"port.del":         {class: retryDel},
	"port.status":      {class: retryRead},
	"port.mode":        {class: retryNever}, // answers the mode before it
	"port.tx_tstamp":   {class: retryRead},
	"port.fec_stat":    {class: retryRead},
	"port.cut_through": {class: retryReadUnless, arg: "enable"},
	"port.stat":        {class: retryRead},
	// A repeat clears what the port counted between the two: the
	// counters read zero either way, as asked.
	"port.stat_clear": {class: retryRead},
	// clear_watermark: the retry would answer the watermark since the
	// first request cleared it, not the one asked for.
	"tm.queue":         {class: retryReadUnless, arg: "clear_watermark"},
	"tm.queue.sched":   {class: retryReadUnless, arg: "priority"},
	"reg.get":          {class: retryRead},
	"reg.set":          {class: retryRead},
	"reg.range":        {class: retryRead},
	"table.add":        {class: retryAdd, reconcile: reconcileTableAdd},
	"table.mod":        {class: retryRead},
	"table.del":        {class: retryDel},
	"table.clear":      {class: retryRead},
	"table.get":        {class: retryRead},
	"pktgen.start":     {class: retryNever}, // a repeat restarts the application
	"pktgen.stop":      {class: retryRead},
	"pktgen.status":    {class: retryRead},
	"mirror.add":       {class: retryAdd, reconcile: reconcileGet("mirror.get")},
	"mirror.get":       {class: retryRead},
	"mirror.del":       {class: retryDel},
	"pre.node.add":     {class: retryAdd, reconcile: reconcileGet("pre.node.get", "dev_ports")},
	"pre.node.get":     {class: retryRead},
	"pre.node.del":     {class: retryDel},
	"pre.mgid.add":     {class: retryAdd, reconcile: reconcileGet("pre.mgid.get", "node_ids")},
	"pre.mgid.get":     {class: retryRead},
	"pre.mgid.del":     {class: retryDel},
	"port.pfc":         {class: retryReadUnless, arg: "rx_map"},
	"tm.queue.pfc_cos": {class: retryReadUnless, arg: "cos"},
	"packet.out":       {class: retryNever}, // a repeat sends the frame twice
	"time":             {class: retryRead},
	"time.wait":        {class: retryRead},
}

// retryable reports whether op with args may be sent again after its
// request was written and the connection lost.
func (r opRetry) retryable(args any) bool {
	switch r.class {
	case retryRead, retryAdd, retryDel:
		return true
	case retryReadUnless:
		m, err := argMap(args)
		if err != nil {
			return false
		}
		v, ok := m[r.arg]
		return !ok || string(v) == "null" || string(v) == "false"
	}
	return false
}

// errOutcomeUnknown is an operation sent, then the connection lost before
// its answer, that cannot be repeated safely.
var errOutcomeUnknown = errors.New("outcome unknown")

// retryAfterLoss handles a request written before the connection was lost
// (lost): it sends it again when that is safe, reconciles an add or a
// delete the first request may have done, and otherwise says the outcome
// is unknown.
func (a *agentClient) retryAfterLoss(ctx context.Context, op string, args, out any, lost error) error {
	r, ok := opRetries[op]
	if !ok || !r.retryable(args) {
		a.transcript.Note("agent connection lost after %s was sent; not repeated", op)
		return fmt.Errorf("switch %s: %s: the connection was lost after the request was sent: the switch may or may not have done it (%w): %w", a.device, op, errOutcomeUnknown, lost)
	}
	a.transcript.Note("agent connection lost; reconnecting")
	_, err := a.exchange(ctx, op, args, out)
	var ae *AgentError
	switch {
	case err != nil && r.class != retryRead && transport.IsConnectionLost(err):
		return fmt.Errorf("switch %s: %s: the connection was lost after the request was sent, and again on its repeat (%w): %w", a.device, op, errOutcomeUnknown, err)
	case err == nil || !errors.As(err, &ae):
		return err
	case r.class == retryDel && ae.Kind == "not_found":
		a.transcript.Note("%s: the repeat found nothing to delete: the request sent before the connection was lost did it (or there was nothing)", op)
		return nil
	case r.class == retryAdd && alreadyExists(ae):
		same, rerr := r.reconcile(ctx, a, args)
		if rerr != nil {
			return fmt.Errorf("switch %s: %s: the connection was lost after the request was sent and the repeat found it done, but reading it back failed (%w): %w", a.device, op, errOutcomeUnknown, rerr)
		}
		if !same {
			return fmt.Errorf("switch %s: %s: the connection was lost after the request was sent and the repeat found an object that differs from the request (%w): %w", a.device, op, errOutcomeUnknown, err)
		}
		a.transcript.Note("%s: done by the request sent before the connection was lost (the repeat found it already there, read back equal to the request)", op)
		return nil
	}
	return err
}

// alreadyExists reports whether the agent refused an add because its
// object exists (BF Runtime's BF_ALREADY_EXISTS, "Already exists").
func alreadyExists(ae *AgentError) bool {
	m := strings.ToLower(ae.Message)
	return strings.Contains(m, "already exists") || strings.Contains(m, "bf_already_exists")
}

func argMap(args any) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	err := decodeArgs(args, &m)
	return m, err
}

// decodeArgs reads a request's arguments into v as the agent reads them:
// through their JSON.
func decodeArgs(args, v any) error {
	b, err := json.Marshal(args)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

// reconcileTableAdd reads the entry with the sent key back (table.get with
// the key) and compares its action and data with the request's.
func reconcileTableAdd(ctx context.Context, a *agentClient, args any) (bool, error) {
	var sent struct {
		Name   string           `json:"name"`
		Action string           `json:"action"`
		Key    map[string]int64 `json:"key"`
		Data   map[string]int64 `json:"data"`
	}
	if err := decodeArgs(args, &sent); err != nil {
		return false, err
	}
	var r struct {
		Entries []struct {
			Key    map[string]int64 `json:"key"`
			Action string           `json:"action"`
			Data   map[string]int64 `json:"data"`
		} `json:"entries"`
	}
	if _, err := a.exchange(ctx, "table.get", map[string]any{"name": sent.Name, "key": sent.Key}, &r); err != nil {
		return false, err
	}
	for _, e := range r.Entries {
		if !sameKey(e.Key, sent.Key) {
			continue
		}
		return sameName(e.Action, sent.Action) && maps.Equal(e.Data, sent.Data), nil
	}
	return false, nil
}

// sameKey reports whether an entry's key read back (got) is the key an
// add sent, as the switch keeps it: the driver stores a ternary field's
// value ANDed with its mask, and an LPM field's without the bits past its
// prefix (open-p4studio bf_rt_p4_table_key_impl.cpp,
// setValueAndMaskInternal). An LPM value read back is the sent one less
// some of its bits: which ones, the field's width says, and the agent's
// keyed table.get checks that (testbed_agent.py, _as_kept).
func sameKey(got, sent map[string]int64) bool {
	if len(got) != len(sent) {
		return false
	}
	for k, v := range sent {
		g, ok := got[k]
		if !ok {
			return false
		}
		if m, ok := sent[k+"_mask"]; ok {
			v &= m
		} else if _, ok := sent[k+"_p_length"]; ok && g&^v == 0 {
			continue
		}
		if g != v {
			return false
		}
	}
	return true
}

// reconcilePortAdd compares the port's status with the port.add request.
func reconcilePortAdd(ctx context.Context, a *agentClient, args any) (bool, error) {
	var sent struct {
		DevPort json.RawMessage `json:"dev_port"`
		Speed   string          `json:"speed"`
		FEC     string          `json:"fec"`
		Enable  bool            `json:"enable"`
	}
	if err := decodeArgs(args, &sent); err != nil {
		return false, err
	}
	var ps struct {
		Enabled bool   `json:"enabled"`
		Speed   string `json:"speed"`
		FEC     string `json:"fec"`
	}
	if _, err := a.exchange(ctx, "port.status", map[string]json.RawMessage{"dev_port": sent.DevPort}, &ps); err != nil {
		return false, err
	}
	return ps.Speed == sent.Speed && ps.FEC == sent.FEC && ps.Enabled == sent.Enable, nil
}

// reconcileGet reads the object back with get (the add's first argument
// names it) and compares each argument of the add with the answer's field
// of that name; the fields named in sets are lists compared as sets. A
// multicast node's dev_ports are a port bitmap on the switch, read back
// in ascending port order and each port once, whatever order the add gave
// (open-p4studio bf_rt_pre_table_data_impl.hpp: setPortBitmap walks the
// bitmap from its lowest bit into $DEV_PORT); a group's node_ids come
// back in the multicast manager's order of node handles (mc_mgr.c:
// mc_mgr_mgrp_get_first_node_mbr and _next walk the group's node_mbrs
// map, keyed by handle), not the add's.
func reconcileGet(get string, sets ...string) func(ctx context.Context, a *agentClient, args any) (bool, error) {
	return func(ctx context.Context, a *agentClient, args any) (bool, error) {
		m, err := argMap(args)
		if err != nil {
			return false, err
		}
		id := map[string]json.RawMessage{}
		for _, k := range []string{"sid", "node_id", "mgid"} {
			if v, ok := m[k]; ok {
				id[k] = v
			}
		}
		var got map[string]json.RawMessage
		if _, err := a.exchange(ctx, get, id, &got); err != nil {
			return false, err
		}
		for k, v := range m {
			if slices.Contains(sets, k) {
				if !sameSet(got[k], v) {
					return false, nil
				}
			} else if !sameJSON(got[k], v) {
				return false, nil
			}
		}
		return true, nil
	}
}

// sameSet compares two JSON lists of integers as sets.
func sameSet(a, b json.RawMessage) bool {
	var x, y []int64
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x) // maps marshal in key order
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// sameName compares action names, one of which may be qualified by its
// control ("SwitchIngress.drop" and "drop").
func sameName(a, b string) bool {
	return a == b || strings.HasSuffix(a, "."+b) || strings.HasSuffix(b, "."+a)
}
