// Package transport holds what every driver needs to reach a device and to
// record what it said: address parsing, line-oriented connections over TCP or
// a serial port, per-device transcripts with secrets scrubbed, and the
// identity every device reports. It imports nothing of ours.
//
// Waiting on a device is asking it (Poll, PollEvery), never sleeping a
// fixed time, and the gaps between asks come from what the device's
// answers have shown: a gap is at least the time an ask takes as measured
// (a device is not kept busier than half the time by the asks), grows past
// it only as an eighth of the time already waited (so a condition met just
// after an ask is seen within two asks and an eighth of the wait, and the
// asks of a slow condition grow with the logarithm of the wait), and is
// at most half of what is left of the deadline (so the last second of a
// wait is not slept through).
package transport
