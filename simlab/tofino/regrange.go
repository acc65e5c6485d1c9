package tofino

// reg.range (dut/tofino/agent/PROTOCOL.md): count consecutive indices of a
// register in one request, each summed over the pipes. The simulated
// switch keeps one copy of a register (pipe 0's; the others read 0, as
// reg.get answers), so the sum is that copy's value.

// maxRegRange is the most indices one reg.range reads (the agent's
// MAX_REG_RANGE: reg_credit's 4096, SD_MAX_VOQS).
const maxRegRange = 4096

// opRegRange answers reg.range.
func (t *Tofino) opRegRange(c opCall) (any, error) {
	name, err := argStr(c.args, "name")
	if err != nil {
		return nil, err
	}
	from, err := argInt(c.args, "from")
	if err != nil {
		return nil, err
	}
	count, err := argInt(c.args, "count")
	if err != nil {
		return nil, err
	}
	if from < 0 || count < 1 || count > maxRegRange {
		return nil, badReq("reg.range: %d indices from %d (expected from >= 0 and 1..%d indices)", count, from, maxRegRange)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	r, found := t.regs[name]
	if !found {
		return nil, notFound("bfrt.%s.pipe has no register %q", t.program, name)
	}
	if size := regSize(name); from+count > int64(size) { // stardust.go, as reg.get bounds it
		return nil, badReq("reg.range: indices %d..%d outside the register %s (0..%d)", from, from+count-1, name, size-1)
	}
	out := make([]int64, count)
	for i := range out {
		out[i] = r[int(from)+i]
	}
	return map[string]any{"values": out}, nil
}
