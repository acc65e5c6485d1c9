"""Runs a warm init in two calls with the SDE's own Python BF Runtime client.

usage: sde_warm_init.py <host:port> <artifacts> <program> <register> <index> <value>

Connects as client 1 (subscribes on the stream channel), sends
VERIFY_AND_WARM_INIT_BEGIN with the program's build from the artifacts
directory (<program>/bf-rt.json, <program>/pipe/{context.json,tofino.bin})
and waits for WARM_INIT_STARTED, reads the program's bf-rt.json, binds,
writes a register index, sends WARM_INIT_END and waits for
WARM_INIT_FINISHED, reads the register back, and sends WARM_INIT_END once
more, which the switch refuses. Prints what happened as one JSON object.
"""

import json
import os
import sys

import bfrt_grpc.client as gc
from bfrt_grpc.bfruntime_pb2_grpc import bfruntime__pb2 as pb


def main(argv):
    addr, artifacts, program, register, index, value = argv[1:7]
    interface = gc.ClientInterface(addr, client_id=1, device_id=0, num_tries=1)
    out = {}
    try:
        d = os.path.join(artifacts, program)
        cfg = gc.ForwardingConfig(program, os.path.join(d, "bf-rt.json"), [
            gc.ProfileInfo("pipe", os.path.join(d, "pipe", "context.json"), os.path.join(d, "pipe", "tofino.bin"), [0, 1, 2, 3])])
        req = pb.SetForwardingPipelineConfigRequest
        out["begin"] = interface.send_set_forwarding_pipeline_config_request(req.VERIFY_AND_WARM_INIT_BEGIN, "", [cfg], timeout=5, num_tries=1)
        info = interface.bfrt_info_get(program)
        interface.bind_pipeline_config(info.p4_name_get())
        out["program"] = info.p4_name_get()
        target = gc.Target(device_id=0, pipe_id=0xFFFF)
        r = info.table_get(register)
        rk = r.make_key([gc.KeyTuple("$REGISTER_INDEX", int(index))])
        field = register + ".f1"
        r.entry_mod(target, [rk], [r.make_data([gc.DataTuple(field, int(value))])])
        out["end"] = interface.send_set_forwarding_pipeline_config_request(req.WARM_INIT_END, "", [], timeout=5, num_tries=1)
        values = []
        for data, _ in r.entry_get(target, [rk], {"from_hw": True}):
            values = list(data.to_dict()[field])
        out["register"] = values
        try:
            interface.send_set_forwarding_pipeline_config_request(req.WARM_INIT_END, "", [], timeout=1, num_tries=1)
            out["again"] = "accepted"
        except gc.BfruntimeForwardingRpcException as e:
            err = e.grpc_error_get()
            out["again"] = "%s: %s" % (err.code().name, err.details())
        print(json.dumps(out, sort_keys=True))
    finally:
        interface.tear_down_stream()


if __name__ == "__main__":
    main(sys.argv)
