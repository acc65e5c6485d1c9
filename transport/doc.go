// Package transport holds what every driver needs to reach a device and to
// record what it said: address parsing, line-oriented connections over TCP or
// a serial port, per-device transcripts with secrets scrubbed, and the
// identity every device reports. It imports nothing of ours.
package transport
