// Package physics is the simulated lab's model of the optical layer:
// received power to bit error rate per transceiver type, Reed-Solomon FEC
// codeword failure, and frame loss; plus exact samplers for loss counts.
//
// PLACEHOLDER: the signatures below are the contract the rest of simlab uses;
// the implementation is being written.
package physics

import "math/rand/v2"

// FEC describes a Reed-Solomon code RS(N,K) over SymbolBits-bit symbols that
// corrects up to T symbol errors per codeword. The zero value means no FEC.
type FEC struct {
	Name       string // "none", "rs528", "rs544"
	N, K       int
	SymbolBits int
	T          int
}

// Transceiver is one optical module type with its receiver model.
type Transceiver struct {
	Name string
}

// TransceiverByName returns a known type: 10GBASE-SR, 25GBASE-SR,
// 50GBASE-SR, 100GBASE-SR4.
func TransceiverByName(name string) (Transceiver, error) { panic("unimplemented") }

// FECByName returns "none", "rs528" (RS(528,514) KR4) or "rs544" (RS(544,514) KP4).
func FECByName(name string) (FEC, error) { panic("unimplemented") }

// TxPowerDBm is the module's average launch power.
func (t Transceiver) TxPowerDBm() float64 { panic("unimplemented") }

// DataRateBps is the Ethernet MAC data rate (10e9 for 10GBASE-SR, 100e9
// for 100GBASE-SR4): what "line rate" means for a traffic generator.
func (t Transceiver) DataRateBps() float64 { panic("unimplemented") }

// BER is the pre-FEC bit error rate at the given average received power.
func (t Transceiver) BER(rxDBm float64) float64 { panic("unimplemented") }

// FrameLossProbability is the probability that a frame of frameBytes bytes
// (L2, including FCS) is lost at rxDBm with the given FEC.
func FrameLossProbability(t Transceiver, fec FEC, rxDBm float64, frameBytes int) float64 {
	panic("unimplemented")
}

// Binomial draws exactly from Binomial(n, p).
func Binomial(r *rand.Rand, n int64, p float64) int64 { panic("unimplemented") }
