package simlab

import (
	"errors"
	"time"
)

// connState is the transport's state carried from one trial to the next
// on a connection.
type connState struct{}

func (n *HostNet) trial(c *hostConn, req, resp int) (time.Duration, int, error) {
	return 0, 0, errors.New("no transport model yet")
}
