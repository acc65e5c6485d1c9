// Package hostagent is the agent that runs on end hosts of the testbed. It
// serves a small, versioned HTTP/JSON API (see API.md) on the host's loopback:
// small-RPC flow-completion-time (FCT) servers and client runs with per-trial
// samples, host counters (interfaces, TCP retransmissions) and RDMA WRITE
// latency through perftest's ib_write_lat, and REACToR host control (traffic
// classes per destination, pause and unpause, rate limits, schedules and
// heartbeats, demand reports, flows; reactor.go). Client is the Go client for that
// API; the host driver reaches the agent through a channel forwarded over its
// SSH connection, and every request carries the run's token (guard.go).
package hostagent

// Version is the agent's version. It changes whenever the API changes: a
// driver replaces an installed agent whose version differs from its own.
const Version = "1.2.0"

// APIVersion is the path prefix of the API this agent serves.
const APIVersion = "v1"
