#!/bin/sh
# Regenerates the Go code of the BF Runtime service from the vendored
# bfruntime.proto (make proto). Needs protoc (Debian: protobuf-compiler,
# which also ships google/protobuf/*.proto), and the Go plugins
# protoc-gen-go (google.golang.org/protobuf/cmd/protoc-gen-go, the version
# go.mod names) and protoc-gen-go-grpc (google.golang.org/grpc/cmd/
# protoc-gen-go-grpc v1.3.0, whose code runs on the grpc go.mod names),
# installed into a scratch GOBIN.
set -eu
cd "$(dirname "$0")"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
pbver=$(go list -m -f '{{.Version}}' google.golang.org/protobuf)
GOBIN=$bin go install google.golang.org/protobuf/cmd/protoc-gen-go@"$pbver"
GOBIN=$bin go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.3.0
inc=/usr/include
PATH=$bin:$PATH protoc -I proto -I "$inc" \
	--go_out=. --go_opt=paths=source_relative --go_opt=Mbfruntime.proto=testbed/internal/bfrtpb\;bfrtpb \
	--go-grpc_out=. --go-grpc_opt=paths=source_relative --go-grpc_opt=Mbfruntime.proto=testbed/internal/bfrtpb\;bfrtpb \
	bfruntime.proto
