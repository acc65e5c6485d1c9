package stardustmodel

// Utilisation is the last-stage FE links' busy fraction: cells sent over
// link-slots.
func (s Stats) Utilisation() float64 {
	if s.Slots == 0 || s.FELinks == 0 {
		return 0
	}
	return float64(s.FELinkBusy) / float64(s.Slots) / float64(s.FELinks)
}

// LatencyQuantile is the q-quantile of the cells' fabric latency, in
// seconds (slots times the slot time).
func (s Stats) LatencyQuantile(q float64) float64 {
	var n int64
	for _, c := range s.LatencyHist {
		n += c
	}
	if n == 0 {
		return 0
	}
	want := int64(q * float64(n))
	var seen int64
	for k, c := range s.LatencyHist {
		seen += c
		if seen > want {
			return float64(k) * s.SlotSeconds
		}
	}
	return float64(len(s.LatencyHist)-1) * s.SlotSeconds
}

// QueueTail is P(Q >= k) over the last-stage FE queue samples.
func (s Stats) QueueTail(k int) float64 {
	var n, above int64
	for j, c := range s.QueueHist {
		n += c
		if j >= k {
			above += c
		}
	}
	if n == 0 {
		return 0
	}
	return float64(above) / float64(n)
}
