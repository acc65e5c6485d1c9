// Package bfrtpb is the Go code protoc generates from the Intel Tofino
// SDE's BF Runtime service definition (proto/bfruntime.proto, vendored
// with its source and licence noted): the messages and the BfRuntime gRPC
// service that bf_switchd serves (port 50052). The driver
// (dut/tofino/bfrtgrpc) and the simulated switch (simlab/tofino) share it;
// neither imports the other. Regenerate with `make proto`.
package bfrtpb
