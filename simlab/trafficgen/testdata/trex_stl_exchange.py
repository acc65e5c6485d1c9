#!/usr/bin/env python3
"""Drive a TRex server through one stateless run exactly as TRex's Python
client does on the wire, with pyzmq alone (Debian's python3-zmq).

The messages follow cisco-system-traffic-generator/trex-core,
scripts/automation/trex_control_plane/interactive/trex/:
  common/trex_req_resp_client.py  JsonRpcClient: a REQ socket with send and
                                  receive timeouts; create_jsonrpc_v2 (jsonrpc,
                                  method, id from random_id_gen, params with
                                  api_h); batches as JSON arrays;
                                  process_single_response (specific_err wins
                                  over message)
  common/trex_conn.py             api_sync_v2 with the STL API class version
  stl/trex_stl_client.py          api_ver = {'name': 'STL', 'major': 5, 'minor': 0}
  stl/trex_stl_port.py            acquire, remove_all_streams, add_streams (a
                                  batch of add_stream), start (mul, duration,
                                  force, core_mask, start_at_ts), stop, release
  stl/trex_stl_streams.py         STLStream fields, STLTXSingleBurst, STLFlowStats
  stl/trex_stl_stats.py           get_pgid_stats {'pgids': [...]}
  common/stats/trex_port_stats.py get_port_stats fields (opackets, ipackets, ...)
The packet is the client's doc example, Ether()/IP(src="16.0.0.1",
dst="48.0.0.1")/UDP(dport=12,sport=1025) padded, built here without scapy.

Usage: trex_stl_exchange.py tcp://127.0.0.1:PORT TOTAL_PKTS
Prints one JSON object with what the server reported.
"""
import base64
import json
import random
import string
import struct
import sys
import time

import zmq


def random_id_gen(length=8):
    # trex/utils/common.py: ids are random strings of letters and digits
    chars = string.ascii_lowercase + string.digits
    while True:
        yield ''.join(random.choice(chars) for _ in range(length))


class RPCError(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


class JsonRpcClient:
    def __init__(self, endpoint, timeout_sec=3):
        self.ctx = zmq.Context()
        self.socket = self.ctx.socket(zmq.REQ)
        self.socket.connect(endpoint)
        self.socket.setsockopt(zmq.SNDTIMEO, timeout_sec * 1000)
        self.socket.setsockopt(zmq.RCVTIMEO, timeout_sec * 1000)
        self.id_gen = random_id_gen()
        self.api_h = None

    def create_jsonrpc_v2(self, method_name, params=None):
        msg = {"jsonrpc": "2.0", "method": method_name, "id": next(self.id_gen)}
        msg["params"] = params if params is not None else {}
        if self.api_h:
            msg["params"]["api_h"] = self.api_h
        return msg

    def _send(self, obj):
        self.socket.send(json.dumps(obj).encode())
        return json.loads(self.socket.recv().decode())

    @staticmethod
    def _single(resp):
        if resp.get("jsonrpc") != "2.0":
            raise RPCError(None, "Malformed JSON Response (%s)" % resp)
        if "error" in resp:
            err = resp["error"]
            raise RPCError(err["code"], err.get("specific_err", err["message"]))
        if "result" not in resp:
            raise RPCError(None, "Malformed JSON Response (%s)" % resp)
        return resp["result"]

    def transmit(self, method_name, params=None):
        return self._single(self._send(self.create_jsonrpc_v2(method_name, params)))

    def transmit_batch(self, commands):
        resp = self._send([self.create_jsonrpc_v2(m, p) for m, p in commands])
        return [self._single(r) for r in resp]

    def close(self):
        self.socket.close(linger=0)
        self.ctx.destroy(linger=0)


def packet(size):
    """Ether/IPv4/UDP of size bytes without the FCS (STLPktBuilder pads)."""
    eth = bytes.fromhex("000000000002") + bytes.fromhex("000000000001") + struct.pack("!H", 0x0800)
    ip_len = size - 14
    hdr = struct.pack("!BBHHHBBH4s4s", 0x45, 0, ip_len, 1, 0, 64, 17, 0,
                      bytes([16, 0, 0, 1]), bytes([48, 0, 0, 1]))
    s = sum(struct.unpack("!10H", hdr))
    while s > 0xffff:
        s = (s & 0xffff) + (s >> 16)
    hdr = hdr[:10] + struct.pack("!H", ~s & 0xffff) + hdr[12:]
    udp = struct.pack("!HHHH", 1025, 12, ip_len - 20, 0)
    return eth + hdr + udp + b"x" * (size - 42)


def stream_json(pg_id, total_pkts, pkt):
    # STLStream(packet=..., mode=STLTXSingleBurst(pps=..., total_pkts=...),
    #           flow_stats=STLFlowStats(pg_id=...)).to_json(), next_stream_id
    # set by STLPort.add_streams
    return {
        "flags": 0, "action_count": 0, "enabled": True, "self_start": True,
        "start_paused": False, "isg": 0.0, "core_id": -1,
        "mode": {"rate": {"type": "pps", "value": 1000000.0}, "type": "single_burst", "total_pkts": total_pkts},
        "packet": {"binary": base64.b64encode(pkt).decode(), "meta": ""},
        "vm": {"instructions": [], "split_by_var": ""},
        "flow_stats": {"enabled": True, "stream_id": pg_id, "vxlan": False, "ieee_1588": False, "rule_type": "stats"},
        "next_stream_id": -1,
    }


def main():
    endpoint, total = sys.argv[1], int(sys.argv[2])
    out = {}
    rpc = JsonRpcClient(endpoint)
    rc = rpc.transmit("api_sync_v2", {"name": "STL", "major": 5, "minor": 0})
    rpc.api_h = rc["api_h"]
    out["version"] = rpc.transmit("get_version")["version"]
    info = rpc.transmit("get_system_info")
    out["port_count"] = info["port_count"]
    out["speed_gbps"] = info["ports"][0]["speed"]
    cmds = rpc.transmit("get_supported_cmds")
    out["missing_cmds"] = sorted({"acquire", "add_stream", "start_traffic", "stop_traffic", "get_port_stats",
                                  "get_pgid_stats", "remove_all_streams", "release"} - set(cmds))
    status = rpc.transmit_batch([("get_port_status", {"port_id": p, "block": False}) for p in (0, 1)])
    out["states_before"] = [s["state"] for s in status]

    session_id = random.getrandbits(32)
    handler = {}
    for p in (0, 1):
        handler[p] = rpc.transmit("acquire", {"port_id": p, "user": "trex-client", "session_id": session_id, "force": False})
    try:
        rpc.transmit("acquire", {"port_id": 0, "user": "someone-else", "session_id": 1, "force": False})
        out["second_owner"] = "accepted"
    except RPCError as e:
        out["second_owner"] = {"code": e.code, "error": str(e)}

    rpc.transmit("remove_all_streams", {"handler": handler[0], "port_id": 0})
    rpc.transmit_batch([("add_stream", {"handler": handler[0], "port_id": 0, "stream_id": 1,
                                        "stream": stream_json(7, total, packet(60))})])
    try:
        bad = stream_json(8, total, packet(60))
        del bad["isg"]
        rpc.transmit("add_stream", {"handler": handler[0], "port_id": 0, "stream_id": 2, "stream": bad})
        out["missing_isg"] = "accepted"
    except RPCError as e:
        out["missing_isg"] = {"code": e.code, "error": str(e)}
    rpc.transmit("start_traffic", {"handler": handler[0], "port_id": 0,
                                   "mul": {"type": "raw", "op": "abs", "value": 1.0},
                                   "duration": -1, "force": False, "core_mask": (1 << 64) - 1, "start_at_ts": 0})
    deadline = time.time() + 20
    while rpc.transmit("get_port_status", {"port_id": 0, "block": False})["state"] == "TX":
        if time.time() > deadline:
            raise SystemExit("port 0 still transmitting after 20 s")
        time.sleep(0.01)
    pg = rpc.transmit("get_pgid_stats", {"pgids": [7]})["flow_stats"]["7"]
    out["pg_tx"], out["pg_rx"] = pg["tp"]["0"], pg["rp"]["1"]
    out["pg_tx_bytes"] = pg["tb"]["0"]
    ports = rpc.transmit_batch([("get_port_stats", {"port_id": p}) for p in (0, 1)])
    out["opackets"], out["ipackets"] = ports[0]["opackets"], ports[1]["ipackets"]
    rpc.transmit("stop_traffic", {"handler": handler[0], "port_id": 0})
    rpc.transmit("remove_all_streams", {"handler": handler[0], "port_id": 0})
    for p in (0, 1):
        rpc.transmit("release", {"handler": handler[p], "port_id": p})
    try:
        rpc.transmit("no_such_method")
        out["unknown_method"] = "accepted"
    except RPCError as e:
        out["unknown_method"] = {"code": e.code, "error": str(e)}
    rpc.close()
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
