package simlab

import (
	"testbed/hostagent"
	"testbed/simlab/host"
)

// hostFibre is the default bench's switch fibre host traffic crosses from
// sw1 to sw2 (its option data_path).
const hostFibre = "lg100"

// hostUser is the simulated hosts' login account.
const hostUser = "testbed"

// hostagentStandIn is the file the simulated lab's inventory offers as the
// prebuilt hostagent for linux/amd64. A simulated host does not execute
// what is uploaded: it runs the agent's code in-process, at this build's
// version; the file only has to say that version, as the real binary does.
func hostagentStandIn() string {
	return `#!/bin/sh
# hostagent stand-in for the testbed's simulated hosts. A simulated host runs
# the hostagent's own code in-process at the version below, whatever file was
# uploaded (simlab/host/hosts.go); elsewhere this file only answers --version.
case "$1" in
--version) echo "hostagent ` + hostagent.Version + `" ;;
*) echo "this hostagent stand-in runs on the testbed's simulated hosts only" >&2; exit 1 ;;
esac
`
}

// Host returns a simulated host by name ("h1", "h2").
func (l *Lab) Host(name string) *host.SimHost { return l.hosts[name] }

// host.HostNet is the simulated hosts' network.
func (l *Lab) HostNet() *host.HostNet { return l.hostNet }
