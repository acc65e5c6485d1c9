"""Drives a switch with the SDE's own Python BF Runtime client (bfrt_grpc).

usage: sde_client.py <host:port> <program> <table> <key field> <key> <action>
       <param>=<value>... -- <register> <index> <value>

Connects as client 0 (subscribes on the stream channel), reads the
program's bf-rt.json (bfrt_info_get), binds to the program, adds a table
entry and reads it back, writes a register index and reads it back from
the hardware (every pipe), and prints what it read as one JSON object.
"""

import json
import sys

import bfrt_grpc.client as gc


def main(argv):
    addr, program, table, key_field, key, action = argv[1:7]
    rest = argv[7:]
    sep = rest.index("--")
    params = [p.split("=", 1) for p in rest[:sep]]
    register, index, value = rest[sep + 1:sep + 4]

    interface = gc.ClientInterface(addr, client_id=0, device_id=0, num_tries=1)
    try:
        info = interface.bfrt_info_get(program)
        interface.bind_pipeline_config(info.p4_name_get())
        target = gc.Target(device_id=0, pipe_id=0xFFFF)
        out = {"program": info.p4_name_get(), "tables": sorted(info.table_name_list_get())}

        t = info.table_get(table)
        k = t.make_key([gc.KeyTuple(key_field, int(key))])
        d = t.make_data([gc.DataTuple(n, int(v)) for n, v in params], action)
        t.entry_add(target, [k], [d])
        entries = []
        for data, got_key in t.entry_get(target, [k], {"from_hw": False}):
            dd = data.to_dict()
            kd = got_key.to_dict()
            entries.append({"key": {n: v["value"] for n, v in kd.items()},
                            "action": dd.get("action_name"),
                            "data": {n: v for n, v in dd.items() if n in dict(params)}})
        out["entries"] = entries

        r = info.table_get(register)
        rk = r.make_key([gc.KeyTuple("$REGISTER_INDEX", int(index))])
        field = register + ".f1"
        r.entry_mod(target, [rk], [r.make_data([gc.DataTuple(field, int(value))])])
        values = []
        for data, _ in r.entry_get(target, [rk], {"from_hw": True}):
            values = list(data.to_dict()[field])
        out["register"] = values
        print(json.dumps(out, sort_keys=True))
    finally:
        interface.tear_down_stream()


if __name__ == "__main__":
    main(sys.argv)
