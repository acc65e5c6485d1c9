package sched

// matcher finds perfect matchings in the bipartite graph of inputs and
// outputs whose edges are the entries of a square matrix at or above a
// threshold, by Hopcroft and Karp ("An n^5/2 algorithm for maximum matchings
// in bipartite graphs", SIAM J. Comput. 1973). The graph is dense, so edges
// are read from the matrix instead of being listed. The matching is kept
// between calls: after a threshold or matrix change, prune drops the edges
// that no longer qualify and run only has to repair what was lost.
type matcher struct {
	n      int
	left   []int // left[i]: output matched to input i, or -1
	right  []int // right[j]: input matched to output j, or -1
	dist   []int
	queue  []int
	s      [][]int64
	thresh int64
}

const unreached = int(^uint(0) >> 1)

func newMatcher(n int) *matcher {
	m := &matcher{n: n, left: make([]int, n), right: make([]int, n), dist: make([]int, n), queue: make([]int, 0, n)}
	for i := range n {
		m.left[i], m.right[i] = -1, -1
	}
	return m
}

// perfect reports whether the entries of s at or above thresh (which must be
// at least 1) hold a perfect matching; if so, m.left is one.
func (m *matcher) perfect(s [][]int64, thresh int64) bool {
	m.s, m.thresh = s, thresh
	size := 0
	for i, j := range m.left {
		if j < 0 {
			continue
		}
		if s[i][j] < thresh {
			m.left[i], m.right[j] = -1, -1
			continue
		}
		size++
	}
	for size < m.n && m.layer() {
		for i := range m.n {
			if m.left[i] < 0 && m.augment(i) {
				size++
			}
		}
	}
	m.s = nil
	return size == m.n
}

// layer is the breadth-first phase: distances from the free inputs along
// alternating paths. It reports whether a free output is reachable.
func (m *matcher) layer() bool {
	m.queue = m.queue[:0]
	for i := range m.n {
		if m.left[i] < 0 {
			m.dist[i] = 0
			m.queue = append(m.queue, i)
		} else {
			m.dist[i] = unreached
		}
	}
	found := false
	for q := 0; q < len(m.queue); q++ {
		i := m.queue[q]
		row := m.s[i]
		for j := range m.n {
			if row[j] < m.thresh {
				continue
			}
			k := m.right[j]
			if k < 0 {
				found = true
			} else if m.dist[k] == unreached {
				m.dist[k] = m.dist[i] + 1
				m.queue = append(m.queue, k)
			}
		}
	}
	return found
}

// augment is the depth-first phase from free input i along the layers.
func (m *matcher) augment(i int) bool {
	row := m.s[i]
	for j := range m.n {
		if row[j] < m.thresh {
			continue
		}
		k := m.right[j]
		if k < 0 || (m.dist[k] == m.dist[i]+1 && m.augment(k)) {
			m.left[i], m.right[j] = j, i
			return true
		}
	}
	m.dist[i] = unreached
	return false
}
