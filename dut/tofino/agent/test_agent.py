"""Tests of testbed_agent.py over TCP on 127.0.0.1, against the stand-in
bfrt of fake_bfrt.py. Run from this directory: python3 -m unittest -v
(Python 3.8 or later)."""

import json
import os
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fake_bfrt  # noqa: E402
import testbed_agent  # noqa: E402

SEQ = "SwitchEgress.reg_seq_no"
PROTECT = "SwitchEgress.link_protect"


TOKEN = "0123456789abcdef" * 4


class Client:
    """One connection speaking the agent protocol; it presents token first
    unless token is None."""

    def __init__(self, port, token=TOKEN):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        self.rd = self.sock.makefile("rb")
        self.next_id = 0
        if token is not None:
            resp = self.call("auth", {"token": token})
            if not resp["ok"]:
                raise AssertionError("auth refused: %s" % resp)

    def close(self):
        self.rd.close()
        self.sock.close()

    def send(self, op, args=None, rid=None):
        if rid is None:
            self.next_id += 1
            rid = self.next_id
        req = {"id": rid, "op": op}
        if args is not None:
            req["args"] = args
        self.sock.sendall((json.dumps(req) + "\n").encode())
        return rid

    def recv(self):
        line = self.rd.readline()
        if not line:
            raise EOFError("the agent closed the connection")
        if not line.endswith(b"\n"):
            raise AssertionError("response not newline-terminated: %r" % line)
        return json.loads(line)

    def call(self, op, args=None):
        rid = self.send(op, args)
        resp = self.recv()
        if resp["id"] != rid:
            raise AssertionError("response id %s for request %s" % (resp["id"], rid))
        return resp


class AgentBase(unittest.TestCase):
    """A served agent over a fake bfrt and one authenticated connection."""

    def setUp(self):
        self.bfrt = fake_bfrt.FakeBfrt()
        self.srv = testbed_agent.serve(self.bfrt, "127.0.0.1", 0, token=lambda: TOKEN,
                                       platform=self.bfrt.testbed_platform, **self.server_options())
        self.thread = threading.Thread(target=self.srv.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()
        self.clients = []
        self.c = self.connect()

    def tearDown(self):
        for c in self.clients:
            c.close()
        self.srv.shutdown()
        self.srv.server_close()
        self.thread.join(5)

    def server_options(self):
        return {}

    def connect(self, token=TOKEN):
        c = Client(self.srv.port, token)
        self.clients.append(c)
        return c

    def ok(self, op, args=None, c=None):
        resp = (c or self.c).call(op, args)
        self.assertTrue(resp["ok"], "%s %s: %s" % (op, args, resp))
        self.assertIsInstance(resp["result"], dict)
        return resp["result"]

    def fails(self, kind, op, args=None, c=None):
        resp = (c or self.c).call(op, args)
        self.assertFalse(resp["ok"], "%s %s succeeded: %s" % (op, args, resp))
        self.assertEqual(resp["error"]["kind"], kind, resp)
        self.assertTrue(resp["error"]["message"], resp)
        return resp["error"]["message"]

    def add_port(self, dev, speed="BF_SPEED_100G", fec="BF_FEC_TYP_RS"):
        return self.ok("port.add", {"dev_port": dev, "speed": speed, "fec": fec, "enable": True})

    # ---- hello, time ----


class AgentTest(AgentBase):
    def test_hello(self):
        before = time.time_ns()
        r = self.ok("hello")
        self.assertEqual(r["agent"], "testbed-bfrt-agent")
        self.assertEqual(r["version"], "1")
        self.assertEqual(r["program"], "sender")
        self.assertTrue(before <= r["time_ns"] <= time.time_ns())

    def test_hello_program_from_bfrt_and_env(self):
        bfrt = fake_bfrt.FakeBfrt(program="receiver")
        self.assertEqual(testbed_agent.Agent(bfrt).hello({})["program"], "receiver")
        bfrt.p4_programs_list = []  # older trees: the child with a pipe
        self.assertEqual(testbed_agent.Agent(bfrt).hello({})["program"], "receiver")
        with mock.patch.dict(os.environ, {"TESTBED_PROGRAM": "other"}):
            self.assertEqual(testbed_agent.Agent(bfrt).hello({})["program"], "other")

    def test_time(self):
        before = time.time_ns()
        t = self.ok("time")["time_ns"]
        self.assertTrue(before <= t <= time.time_ns())

    def test_time_wait(self):
        until = time.time_ns() + 80 * 10**6
        t = self.ok("time.wait", {"until_ns": until})["time_ns"]
        self.assertGreaterEqual(t, until)
        self.assertGreaterEqual(time.time_ns(), until)
        # A time already past answers at once.
        start = time.monotonic()
        self.assertGreaterEqual(self.ok("time.wait", {"until_ns": until - 10**9})["time_ns"], until)
        self.assertLess(time.monotonic() - start, 0.5)

    def test_time_wait_limit(self):
        start = time.monotonic()
        msg = self.fails("bad_request", "time.wait", {"until_ns": time.time_ns() + 61 * 10**9})
        self.assertIn("60", msg)
        self.assertLess(time.monotonic() - start, 1)
        self.fails("bad_request", "time.wait", {})
        self.fails("bad_request", "time.wait", {"until_ns": "soon"})

    def test_time_wait_does_not_hold_other_connections(self):
        waiter = self.connect()
        until = time.time_ns() + 1500 * 10**6
        waiter.send("time.wait", {"until_ns": until})
        start = time.monotonic()
        self.ok("reg.get", {"name": SEQ, "index": 0})
        self.ok("hello")
        self.assertLess(time.monotonic() - start, 1.0)
        r = waiter.recv()
        self.assertTrue(r["ok"], r)
        self.assertGreaterEqual(r["result"]["time_ns"], until)

    # ---- ports ----

    def test_port_lifecycle(self):
        self.fails("not_found", "port.status", {"dev_port": 136})
        self.add_port(136)
        add = self.bfrt.calls_to("port.port", "add")[-1]
        self.assertEqual(add, {"DEV_PORT": 136, "SPEED": "BF_SPEED_100G", "FEC": "BF_FEC_TYP_RS",
                               "AUTO_NEGOTIATION": "PM_AN_FORCE_DISABLE", "PORT_ENABLE": True})
        st = self.ok("port.status", {"dev_port": 136})
        self.assertEqual(st, {"dev_port": 136, "enabled": True, "up": True, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})
        self.bfrt.set_link(136, False)
        self.assertFalse(self.ok("port.status", {"dev_port": 136})["up"])
        msg = self.fails("bfrt", "port.add", {"dev_port": 136, "speed": "BF_SPEED_25G", "fec": "BF_FEC_TYP_NONE", "enable": True})
        self.assertIn("Already exists", msg)
        self.ok("port.del", {"dev_port": 136})
        self.fails("not_found", "port.status", {"dev_port": 136})
        self.fails("not_found", "port.del", {"dev_port": 136})

    def test_port_mode(self):
        self.fails("not_found", "port.mode", {"dev_port": 136, "speed": "BF_SPEED_25G", "fec": "BF_FEC_TYP_NONE"})
        self.add_port(136)
        r = self.ok("port.mode", {"dev_port": 136, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})
        self.assertEqual(r, {"previous": {"speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS", "enabled": True}, "changed": False})
        self.assertEqual(self.bfrt.calls_to("port.port", "delete"), [])
        r = self.ok("port.mode", {"dev_port": 136, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_NONE"})
        self.assertEqual(r, {"previous": {"speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS", "enabled": True}, "changed": True})
        self.assertEqual(self.bfrt.calls_to("port.port", "add")[-1],
                         {"DEV_PORT": 136, "SPEED": "BF_SPEED_100G", "FEC": "BF_FEC_TYP_NONE",
                          "AUTO_NEGOTIATION": "PM_AN_FORCE_DISABLE", "PORT_ENABLE": True})
        st = self.ok("port.status", {"dev_port": 136})
        self.assertEqual((st["speed"], st["fec"], st["enabled"]), ("BF_SPEED_100G", "BF_FEC_TYP_NONE", True))
        # A disabled port stays disabled.
        self.ok("port.add", {"dev_port": 8, "speed": "BF_SPEED_10G", "fec": "BF_FEC_TYP_NONE", "enable": False})
        self.ok("port.mode", {"dev_port": 8, "speed": "BF_SPEED_25G", "fec": "BF_FEC_TYP_FC"})
        st = self.ok("port.status", {"dev_port": 8})
        self.assertEqual((st["speed"], st["fec"], st["enabled"]), ("BF_SPEED_25G", "BF_FEC_TYP_FC", False))
        # Unknown choices are refused before anything is touched.
        n = len(self.bfrt.calls_to("port.port", "delete"))
        self.fails("bad_request", "port.mode", {"dev_port": 136, "speed": "BF_SPEED_400G", "fec": "BF_FEC_TYP_RS"})
        self.fails("bad_request", "port.mode", {"dev_port": 136, "speed": "BF_SPEED_25G", "fec": "KR4"})
        self.assertEqual(len(self.bfrt.calls_to("port.port", "delete")), n)

    def test_port_tx_tstamp(self):
        self.fails("not_found", "port.tx_tstamp", {"dev_port": 136})
        self.add_port(136)
        self.assertEqual(self.ok("port.tx_tstamp", {"dev_port": 136}), {"valid": False, "value": 0, "id": 0})
        self.bfrt.set_tx_tstamp(136, 123456789012, 7)
        self.assertEqual(self.ok("port.tx_tstamp", {"dev_port": 136}), {"valid": True, "value": 123456789012, "id": 7})

    def test_port_cut_through(self):
        self.fails("not_found", "port.cut_through", {"dev_port": 136})
        self.add_port(136)
        self.assertEqual(self.ok("port.cut_through", {"dev_port": 136}), {"previous": False, "enabled": False})
        self.assertEqual(self.ok("port.cut_through", {"dev_port": 136, "enable": True}), {"previous": False, "enabled": True})
        self.assertEqual(self.bfrt.calls_to("port.port", "mod")[-1], {"DEV_PORT": 136, "CUT_THROUGH_EN": True})
        # Unchanged: nothing is written.
        n = len(self.bfrt.calls_to("port.port", "mod"))
        self.assertEqual(self.ok("port.cut_through", {"dev_port": 136, "enable": True}), {"previous": True, "enabled": True})
        self.assertEqual(len(self.bfrt.calls_to("port.port", "mod")), n)
        self.fails("bad_request", "port.cut_through", {"dev_port": 136, "enable": "yes"})

    def test_port_mode_failed_add_restores(self):
        self.add_port(136)
        real_add = self.bfrt.port.port.add
        refused = []

        def add(**kw):
            if kw.get("SPEED") == "BF_SPEED_25G" and not refused:
                refused.append(kw)
                raise fake_bfrt.BfRtTableError("Error: table_entry_add failed on table port.port. [Invalid arguments]",
                                               None, 3)
            return real_add(**kw)

        with mock.patch.object(self.bfrt.port.port, "add", add):
            msg = self.fails("bfrt", "port.mode", {"dev_port": 136, "speed": "BF_SPEED_25G", "fec": "BF_FEC_TYP_RS"})
        self.assertIn("Invalid arguments", msg)
        st = self.ok("port.status", {"dev_port": 136})
        self.assertEqual((st["speed"], st["fec"], st["enabled"]), ("BF_SPEED_100G", "BF_FEC_TYP_RS", True))

    def test_port_add_disabled(self):
        self.ok("port.add", {"dev_port": 8, "speed": "BF_SPEED_10G", "fec": "BF_FEC_TYP_NONE", "enable": False})
        st = self.ok("port.status", {"dev_port": 8})
        self.assertFalse(st["enabled"])
        self.assertFalse(st["up"])

    def test_port_add_bad_arguments(self):
        # bfrt_python would print the bad choice and return: the agent must
        # refuse it before.
        self.assertIn("BF_SPEED_1000G", self.fails("bad_request", "port.add", {"dev_port": 136, "speed": "BF_SPEED_1000G", "fec": "BF_FEC_TYP_RS"}))
        self.fails("bad_request", "port.add", {"dev_port": 136, "speed": "BF_SPEED_100G", "fec": "RS"})
        self.fails("bad_request", "port.add", {"speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})
        self.fails("bad_request", "port.add", {"dev_port": "136", "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})
        self.fails("bad_request", "port.add", {"dev_port": True, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})
        self.fails("bad_request", "port.add", {"dev_port": 136, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS", "enable": 1})
        self.assertEqual(self.bfrt.ports, {})
        # A port bfrt refuses is the bfrt's word.
        self.fails("bfrt", "port.add", {"dev_port": 100, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS"})

    def test_port_counters(self):
        self.fails("not_found", "port.stat", {"dev_port": 136})
        self.add_port(136)
        self.bfrt.set_counter(136, "$FramesReceivedOK", 1000)
        self.bfrt.set_counter(136, "$FramesTransmittedAll", 2**40)
        before = time.time_ns()
        r = self.ok("port.stat", {"dev_port": 136})
        self.assertTrue(before <= r["time_ns"] <= time.time_ns())
        c = r["counters"]
        self.assertEqual(set(c), set(fake_bfrt.PORT_STAT_FIELDS))
        self.assertEqual(c["$FramesReceivedOK"], 1000)
        self.assertEqual(c["$FramesTransmittedAll"], 2**40)
        self.assertEqual(self.bfrt.calls_to("port.port_stat", "get")[-1]["from_hw"], True)
        # Only the counters named.
        c = self.ok("port.stat", {"dev_port": 136, "names": ["$FramesReceivedOK", "$FramesTransmittedAll"]})["counters"]
        self.assertEqual(c, {"$FramesReceivedOK": 1000, "$FramesTransmittedAll": 2**40})
        self.fails("bad_request", "port.stat", {"dev_port": 136, "names": ["$NoSuchCounter"]})
        self.fails("bad_request", "port.stat", {"dev_port": 136, "names": []})
        self.fails("bad_request", "port.stat", {"dev_port": 136, "names": "$FramesReceivedOK"})
        self.ok("port.stat_clear", {"dev_port": 136})
        self.assertEqual(self.bfrt.calls_to("port.port_stat", "mod")[-1], {"DEV_PORT": 136})
        c = self.ok("port.stat", {"dev_port": 136})["counters"]
        self.assertEqual(c["$FramesReceivedOK"], 0)
        self.assertEqual(c["$FramesTransmittedAll"], 0)
        self.fails("not_found", "port.stat_clear", {"dev_port": 140})

    # ---- traffic manager ----

    def test_tm_queue(self):
        self.bfrt.set_queue(1, 17, 9, usage=40, watermark=90, drops=3)
        q = {"pipe": 1, "pg_id": 17, "pg_queue": 9}
        self.assertEqual(self.ok("tm.queue", q), {"usage_cells": 40, "watermark_cells": 90, "drop_count_packets": 3})
        self.assertEqual(self.bfrt.calls_to("tf1.tm.counter.queue", "get")[-1]["pipe"], 1)
        self.assertEqual(self.ok("tm.queue", dict(q, clear_watermark=True))["watermark_cells"], 90)
        self.assertEqual(self.ok("tm.queue", q), {"usage_cells": 40, "watermark_cells": 0, "drop_count_packets": 3})
        # Other queues are apart.
        self.assertEqual(self.ok("tm.queue", {"pipe": 0, "pg_id": 17, "pg_queue": 9})["usage_cells"], 0)
        self.fails("not_found", "tm.queue", {"pipe": 1, "pg_id": 40, "pg_queue": 0})
        self.fails("bad_request", "tm.queue", {"pipe": 1, "pg_id": 17})
        self.fails("bad_request", "tm.queue", {"pipe": 9, "pg_id": 17, "pg_queue": 0})

    # ---- registers ----

    def test_tm_queue_sched(self):
        # Port 138: pipe 1, pg_id 2, pg_port_nr 2; queue 5 is pg_queue 21.
        q = {"dev_port": 138, "qid": 5}
        self.assertEqual(self.ok("tm.queue.sched", dict(q, priority=7)), {"priority": 0})
        self.assertEqual(self.bfrt.sched[(1, 2, 21)]["max_priority"], 7)
        mods = self.bfrt.calls_to("tf1.tm.queue.sched_cfg", "mod")
        self.assertEqual(mods[-1], {"pipe": 1, "pg_id": 2, "pg_queue": 21, "max_priority": "7"})
        # Only max_priority is written; the rest keeps the SDE's defaults.
        self.assertEqual(self.bfrt.sched[(1, 2, 21)]["min_priority"], 0)
        self.assertEqual(self.bfrt.sched[(1, 2, 21)]["dwrr_weight"], 1023)
        # The previous priority comes back, and 0 reads "LOW".
        self.assertEqual(self.ok("tm.queue.sched", dict(q, priority=0)), {"priority": 7})
        self.assertEqual(self.ok("tm.queue.sched", dict(q, priority=3)), {"priority": 0})
        # The same priority again writes nothing.
        n = len(self.bfrt.calls_to("tf1.tm.queue.sched_cfg", "mod"))
        self.assertEqual(self.ok("tm.queue.sched", dict(q, priority=3)), {"priority": 3})
        self.assertEqual(len(self.bfrt.calls_to("tf1.tm.queue.sched_cfg", "mod")), n)
        # Without a priority the call reads, and writes nothing.
        self.assertEqual(self.ok("tm.queue.sched", q), {"priority": 3})
        self.assertEqual(len(self.bfrt.calls_to("tf1.tm.queue.sched_cfg", "mod")), n)
        # Other queues and ports are apart.
        self.assertEqual(self.ok("tm.queue.sched", {"dev_port": 138, "qid": 4, "priority": 1}), {"priority": 0})
        self.assertEqual(self.ok("tm.queue.sched", {"dev_port": 10, "qid": 5, "priority": 1}), {"priority": 0})
        self.assertEqual(self.bfrt.sched[(0, 2, 21)]["max_priority"], 1)
        self.fails("not_found", "tm.queue.sched", {"dev_port": 100, "qid": 0, "priority": 1})
        for bad in ({"dev_port": 138, "qid": 8, "priority": 1}, {"dev_port": 138, "qid": 1, "priority": 8},
                    {"dev_port": 138, "qid": 1, "priority": "7"}, {"dev_port": 512, "qid": 1, "priority": 1}):
            self.fails("bad_request", "tm.queue.sched", bad)

    def test_tm_queue_sched_write_not_taken(self):
        # bfrt_python only prints a choice it does not know: the agent
        # reads the priority back and says so.
        sc = self.bfrt.tf1.tm.queue.sched_cfg
        real = sc.mod
        sc.mod = lambda **kw: real(**dict(kw, max_priority=int(kw["max_priority"])))
        try:
            msg = self.fails("bfrt", "tm.queue.sched", {"dev_port": 4, "qid": 0, "priority": 7})
            self.assertIn("reads 0 after writing 7", msg)
        finally:
            sc.mod = real

    def test_sched_priority_spellings(self):
        for v, want in (("LOW", 0), ("HIGH", 7), ("0", 0), ("5", 5), (b"7", 7), (3, 3), ("8", None), ("", None), (True, None), (None, None)):
            self.assertEqual(testbed_agent.sched_priority(v), want, v)

    def test_registers(self):
        self.assertEqual(self.ok("reg.get", {"name": SEQ, "index": 32})["values"], [0, 0, 0, 0])
        self.ok("reg.set", {"name": SEQ, "index": 32, "value": 65535})
        self.assertEqual(self.bfrt.calls_to("pipe.SwitchEgress.reg_seq_no", "mod")[-1], {"REGISTER_INDEX": 32, "f1": 65535})
        self.assertEqual(self.ok("reg.get", {"name": SEQ, "index": 32})["values"], [65535] * 4)
        self.assertEqual(self.bfrt.calls_to("pipe.SwitchEgress.reg_seq_no", "get")[-1]["from_hw"], True)
        self.assertEqual(self.ok("reg.get", {"name": SEQ, "index": 33})["values"], [0] * 4)
        # One value per pipe, as the register holds them.
        self.bfrt.sender.pipe.SwitchEgress.reg_seq_no.values[5] = [1, 2, 3, 4]
        self.assertEqual(self.ok("reg.get", {"name": "pipe." + SEQ, "index": 5})["values"], [1, 2, 3, 4])
        self.ok("reg.set", {"name": "SwitchIngress.reg_ack_timeout_count", "index": 0, "value": 7})
        self.assertEqual(self.ok("reg.get", {"name": "SwitchIngress.reg_ack_timeout_count", "index": 0})["values"], [7] * 4)

    def test_register_errors(self):
        self.assertIn("reg_nope", self.fails("not_found", "reg.get", {"name": "SwitchEgress.reg_nope", "index": 0}))
        self.fails("not_found", "reg.get", {"name": "Nowhere.reg_seq_no", "index": 0})
        self.fails("not_found", "reg.set", {"name": "SwitchEgress.reg_nope", "index": 0, "value": 1})
        self.fails("not_found", "reg.get", {"name": PROTECT, "index": 0})
        self.fails("not_found", "reg.get", {"name": "SwitchEgress", "index": 0})
        self.fails("not_found", "reg.get", {"name": SEQ, "index": 4096})
        self.fails("bfrt", "reg.set", {"name": SEQ, "index": 4096, "value": 1})
        self.fails("bfrt", "reg.set", {"name": SEQ, "index": 0, "value": 1 << 16})  # wider than the register
        self.fails("bad_request", "reg.get", {"name": SEQ})
        self.fails("bad_request", "reg.get", {"index": 0})
        self.fails("bad_request", "reg.set", {"name": SEQ, "index": 0})
        self.fails("bad_request", "reg.set", {"name": SEQ, "index": 0, "value": 1.5})
        self.fails("bad_request", "reg.get", {"name": "SwitchEgress.__class__", "index": 0})
        self.fails("bad_request", "reg.get", {"name": "", "index": 0})

    def test_register_range(self):
        reg = self.bfrt.sender.pipe.SwitchEgress.reg_seq_no
        reg.values[10] = [1, 2, 3, 4]
        reg.values[12] = [0, 7, 0, 0]
        self.assertEqual(self.ok("reg.range", {"name": SEQ, "from": 9, "count": 5})["values"], [0, 10, 0, 7, 0])
        gets = self.bfrt.calls_to("pipe.SwitchEgress.reg_seq_no", "get")[-5:]
        self.assertEqual([g["REGISTER_INDEX"] for g in gets], [9, 10, 11, 12, 13])
        self.assertTrue(all(g["from_hw"] for g in gets))
        # The whole register (512 indices), the last one included.
        reg.values[511] = [0, 0, 0, 5]
        got = self.ok("reg.range", {"name": SEQ, "from": 0, "count": 512})["values"]
        self.assertEqual((len(got), got[10], got[511], sum(got)), (512, 10, 5, 22))
        self.assertIn("512", self.fails("not_found", "reg.range", {"name": SEQ, "from": 500, "count": 13}))
        self.fails("bad_request", "reg.range", {"name": SEQ, "from": 0, "count": 4097})
        self.fails("bad_request", "reg.range", {"name": SEQ, "from": 0, "count": 0})
        self.fails("bad_request", "reg.range", {"name": SEQ, "from": -1, "count": 2})
        self.fails("bad_request", "reg.range", {"name": SEQ, "count": 2})
        self.fails("not_found", "reg.range", {"name": "SwitchEgress.reg_nope", "from": 0, "count": 2})
        self.fails("not_found", "reg.range", {"name": PROTECT, "from": 0, "count": 2})

    def test_register_range_is_one_hold_of_the_lock(self):
        # Another connection's calls wait for the whole range: the stand-in
        # raises if bfrt is entered twice at once, and the range's gets are
        # consecutive in its call log.
        self.bfrt.call_delay = 0.0005
        other = self.connect()
        done = []

        def writer():
            for i in range(20):
                r = other.call("reg.set", {"name": SEQ, "index": 1, "value": i})
                done.append(r["ok"])

        th = threading.Thread(target=writer)
        th.start()
        self.ok("reg.range", {"name": SEQ, "from": 0, "count": 64})
        th.join(10)
        self.assertEqual(done, [True] * 20)
        self.assertEqual(self.bfrt.concurrent_calls, 0)
        seq = [(m, kw.get("REGISTER_INDEX")) for t, m, kw in self.bfrt.calls if t == "pipe.SwitchEgress.reg_seq_no"]
        gets = [i for i, (m, _) in enumerate(seq) if m == "get"]
        self.assertEqual(len(gets), 64)
        self.assertEqual(gets[-1] - gets[0], 63, "another call came between the range's reads")

    # ---- tables ----

    def test_table_lifecycle(self):
        e = {"name": PROTECT, "action": "protect", "key": {"egress_port": 136}, "data": {"dummy_pkt_max_count": 4, "blocking_mode": 1}}
        self.ok("table.add", e)
        self.assertEqual(self.bfrt.calls_to("pipe.SwitchEgress.link_protect", "add_with_protect")[-1],
                         {"egress_port": 136, "dummy_pkt_max_count": 4, "blocking_mode": 1})
        self.assertIn("Already exists", self.fails("bfrt", "table.add", e))
        self.ok("table.add", dict(e, key={"egress_port": 140}, data={"dummy_pkt_max_count": 2, "blocking_mode": 0}))
        got = self.ok("table.get", {"name": PROTECT})["entries"]
        want = [{"key": {"egress_port": 136}, "action": "protect", "data": {"dummy_pkt_max_count": 4, "blocking_mode": 1}},
                {"key": {"egress_port": 140}, "action": "protect", "data": {"dummy_pkt_max_count": 2, "blocking_mode": 0}}]
        self.assertEqual(sorted(got, key=lambda x: x["key"]["egress_port"]), want)
        self.ok("table.del", {"name": PROTECT, "key": {"egress_port": 136}})
        self.assertEqual(self.ok("table.get", {"name": PROTECT})["entries"], want[1:])
        self.assertIn("Object not found", self.fails("not_found", "table.del", {"name": PROTECT, "key": {"egress_port": 136}}))
        self.ok("table.clear", {"name": PROTECT})
        self.assertEqual(self.ok("table.get", {"name": PROTECT})["entries"], [])

    def test_table_mod(self):
        # mod_with_<action>: the entry keeps its key and takes the new data
        # in place; the other entries are untouched.
        a = {"name": PROTECT, "action": "protect", "key": {"egress_port": 136}, "data": {"dummy_pkt_max_count": 4, "blocking_mode": 1}}
        b = dict(a, key={"egress_port": 140})
        self.ok("table.add", a)
        self.ok("table.add", b)
        self.ok("table.mod", dict(a, data={"dummy_pkt_max_count": 7, "blocking_mode": 0}))
        self.assertEqual(self.bfrt.calls_to("pipe.SwitchEgress.link_protect", "mod_with_protect")[-1],
                         {"egress_port": 136, "dummy_pkt_max_count": 7, "blocking_mode": 0})
        got = sorted(self.ok("table.get", {"name": PROTECT})["entries"], key=lambda x: x["key"]["egress_port"])
        self.assertEqual(got, [{"key": {"egress_port": 136}, "action": "protect", "data": {"dummy_pkt_max_count": 7, "blocking_mode": 0}},
                               {"key": {"egress_port": 140}, "action": "protect", "data": {"dummy_pkt_max_count": 4, "blocking_mode": 1}}])
        self.assertEqual(len(self.bfrt.calls_to("pipe.SwitchEgress.link_protect", "delete")), 0)
        # A key with no entry: not_found, nothing added.
        self.assertIn("Object not found", self.fails("not_found", "table.mod", dict(a, key={"egress_port": 8})))
        self.assertEqual(len(self.ok("table.get", {"name": PROTECT})["entries"]), 2)
        # A bad action: unknown (not_found, as table.add), not a name or
        # missing (bad_request); a bad field is the request's fault.
        self.assertIn("mod_with_unprotect", self.fails("not_found", "table.mod", dict(a, action="unprotect")))
        self.fails("bad_request", "table.mod", dict(a, action="pro tect"))
        self.fails("bad_request", "table.mod", {"name": PROTECT, "key": {"egress_port": 136}})
        self.assertIn("colour", self.fails("bad_request", "table.mod", dict(a, key={"colour": 1})))
        self.fails("bad_request", "table.mod", dict(a, data={"egress_port": 2}))
        self.fails("bfrt", "table.mod", dict(a, data={"dummy_pkt_max_count": 1 << 40, "blocking_mode": 0}))
        self.fails("not_found", "table.mod", dict(a, name="SwitchEgress.nope"))
        # Another action of the table: the entry takes it, in place.
        name = "SwitchIngress.decide_retx_or_drop"
        key = {"is_missing_hole_1": 1, "is_missing_hole_1_mask": 1, "MATCH_PRIORITY": 3}
        self.ok("table.add", {"name": name, "action": "retx", "key": key})
        self.ok("table.mod", {"name": name, "action": "drop_buffered", "key": key})
        self.assertEqual(self.ok("table.get", {"name": name})["entries"], [{"key": key, "action": "drop_buffered", "data": {}}])

    def test_table_get_by_key(self):
        for port in (136, 140, 144):
            self.ok("table.add", {"name": PROTECT, "action": "protect", "key": {"egress_port": port},
                                  "data": {"dummy_pkt_max_count": port - 130, "blocking_mode": 0}})
        got = self.ok("table.get", {"name": PROTECT, "key": {"egress_port": 140}})["entries"]
        self.assertEqual(got, [{"key": {"egress_port": 140}, "action": "protect", "data": {"dummy_pkt_max_count": 10, "blocking_mode": 0}}])
        self.assertEqual(self.ok("table.get", {"name": PROTECT, "key": {"egress_port": 8}})["entries"], [])
        # A part of a two-field key selects every entry with that part.
        name = "SwitchIngress.decide_retx_or_drop"
        action = "retx"
        for hole, prio in ((1, 1), (0, 2), (1, 3)):
            self.ok("table.add", {"name": name, "action": action,
                                  "key": {"is_missing_hole_1": hole, "is_missing_hole_1_mask": 1, "MATCH_PRIORITY": prio}})
        got = self.ok("table.get", {"name": name, "key": {"is_missing_hole_1": 1}})["entries"]
        self.assertEqual(sorted(e["key"]["MATCH_PRIORITY"] for e in got), [1, 3])
        # A field the key does not have, an empty or a malformed key.
        self.assertIn("colour", self.fails("bad_request", "table.get", {"name": PROTECT, "key": {"colour": 1}}))
        self.fails("bad_request", "table.get", {"name": PROTECT, "key": {}})
        self.fails("bad_request", "table.get", {"name": PROTECT, "key": [1]})
        self.fails("bad_request", "table.get", {"name": PROTECT, "key": {"egress_port": "x"}})

    def test_table_names_round_trip(self):
        # A key field with a slice and a ternary key: their parameter names
        # as bfrt_python makes them, the same on the way in and out.
        self.ok("table.add", {"name": "SwitchEgress.decide_to_emulate_corruption", "action": "do_corruption_emulation",
                              "key": {"egress_port_7_0_": 8}, "data": {"seqno_lookup_idx": 8}})
        self.assertEqual(self.ok("table.get", {"name": "SwitchEgress.decide_to_emulate_corruption"})["entries"],
                         [{"key": {"egress_port_7_0_": 8}, "action": "do_corruption_emulation", "data": {"seqno_lookup_idx": 8}}])
        key = {"is_missing_hole_1": 1, "is_missing_hole_1_mask": 1, "MATCH_PRIORITY": 3}
        self.ok("table.add", {"name": "SwitchIngress.decide_retx_or_drop", "action": "retx", "key": key})
        self.assertEqual(self.ok("table.get", {"name": "SwitchIngress.decide_retx_or_drop"})["entries"],
                         [{"key": key, "action": "retx", "data": {}}])
        self.ok("table.del", {"name": "SwitchIngress.decide_retx_or_drop", "key": key})

    def test_table_get_by_a_key_the_switch_masked(self):
        # The driver keeps a ternary value ANDed with its mask: an entry
        # added with a value outside its mask reads back without those
        # bits, and a get by the key it was added with still finds it.
        name = "SwitchIngress.decide_retx_or_drop"
        key = {"is_missing_hole_1": 1, "is_missing_hole_1_mask": 0, "MATCH_PRIORITY": 7}
        self.ok("table.add", {"name": name, "action": "retx", "key": key})
        kept = dict(key, is_missing_hole_1=0)
        self.assertEqual(self.ok("table.get", {"name": name})["entries"], [{"key": kept, "action": "retx", "data": {}}])
        self.assertEqual(self.ok("table.get", {"name": name, "key": key})["entries"], [{"key": kept, "action": "retx", "data": {}}])
        self.assertEqual(self.ok("table.get", {"name": name, "key": dict(key, MATCH_PRIORITY=8)})["entries"], [])

    def test_table_names_as_bfrtcli_lengthens_them(self):
        # Two key fields ending alike, and a data field ending like a key
        # field: bfrtcli names them by more parts (BFLeaf._make_param_names,
        # bfrtcli.py), and the agent reads the entry back under those names.
        ig = self.bfrt.sender.pipe.SwitchIngress
        fake_bfrt.MatchTable(self.bfrt, ig, "SwitchIngress", "route",
                             [("hdr.ipv4.dst_addr", "ipv4_dst_addr", "EXACT", 32),
                              ("hdr.ipv6.dst_addr", "ipv6_dst_addr", "EXACT", 32)],
                             {"SwitchIngress.set_port": [("port", 9)]})
        key = {"ipv4_dst_addr": 10, "ipv6_dst_addr": 6}
        self.ok("table.add", {"name": "SwitchIngress.route", "action": "set_port", "key": key, "data": {"port": 3}})
        want = [{"key": key, "action": "set_port", "data": {"port": 3}}]
        self.assertEqual(self.ok("table.get", {"name": "SwitchIngress.route"})["entries"], want)
        self.assertEqual(self.ok("table.get", {"name": "SwitchIngress.route", "key": key})["entries"], want)
        self.assertEqual(testbed_agent.param_names([b"hdr.eth.port"], [b"port"]),
                         ({b"hdr.eth.port": "hdr_eth_port"}, {b"port": "port"}))
        self.assertEqual(testbed_agent.param_names([b"ig_md.class", b"$MATCH_PRIORITY", b"eg_intr_md.egress_port[7:0]"], [b"seq"]),
                         ({b"ig_md.class": "key_class", b"$MATCH_PRIORITY": "MATCH_PRIORITY",
                           b"eg_intr_md.egress_port[7:0]": "egress_port_7_0_"}, {b"seq": "seq"}))

    def test_table_errors(self):
        self.fails("not_found", "table.add", {"name": "SwitchEgress.nope", "action": "protect", "key": {"egress_port": 1}})
        self.fails("not_found", "table.get", {"name": "SwitchEgress.nope"})
        self.fails("not_found", "table.get", {"name": SEQ})  # a register
        msg = self.fails("not_found", "table.add", {"name": PROTECT, "action": "unprotect", "key": {"egress_port": 1}})
        self.assertIn("unprotect", msg)
        self.assertIn("colour", self.fails("bad_request", "table.add", {"name": PROTECT, "action": "protect", "key": {"colour": 1}}))
        self.fails("bad_request", "table.add", {"name": PROTECT, "action": "protect", "key": {"egress_port": "x"}})
        self.fails("bad_request", "table.add", {"name": PROTECT, "action": "protect", "key": [1]})
        self.fails("bad_request", "table.add", {"name": PROTECT, "action": "pro tect", "key": {"egress_port": 1}})
        self.fails("bad_request", "table.add", {"name": PROTECT, "action": "protect", "key": {"egress_port": 1}, "data": {"egress_port": 2}})
        self.fails("bad_request", "table.add", {"name": PROTECT, "key": {"egress_port": 1}})
        self.fails("bfrt", "table.add", {"name": PROTECT, "action": "protect", "key": {"egress_port": 1 << 9}})
        self.fails("bad_request", "table.del", {"name": PROTECT, "key": {"port": 1}})
        self.assertEqual(self.ok("table.get", {"name": PROTECT})["entries"], [])

    def test_many_entries(self):
        for i in range(200):
            self.ok("table.add", {"name": "SwitchIngress.emulate_random_pkt_drop", "action": "drop", "key": {"rand_num": i * 5}})
        got = self.ok("table.get", {"name": "SwitchIngress.emulate_random_pkt_drop"})["entries"]
        self.assertEqual(sorted(e["key"]["rand_num"] for e in got), [i * 5 for i in range(200)])

    # ---- packet generator ----

    def pktgen(self, **kw):
        args = {"app_id": 1, "dev_port": 68, "egress_port": 136, "pkt_len": 1514, "timer_ns": 1000,
                "batches": 10, "packets_per_batch": 100}
        args.update(kw)
        return args

    def test_pktgen(self):
        self.assertIn("136", self.fails("not_found", "pktgen.start", self.pktgen()))
        self.add_port(136)
        st = self.ok("pktgen.status", {"app_id": 1})
        self.assertEqual(st, {"enabled": False, "packets": 0, "done": False})
        self.ok("pktgen.start", self.pktgen())
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.port_cfg", "mod")[-1], {"dev_port": 68, "pktgen_enable": True})
        buf = self.bfrt.calls_to("tf1.pktgen.pkt_buffer", "mod")[-1]
        self.assertEqual(buf["pipe"], 0)
        self.assertEqual(buf["pkt_buffer_size"], 1514 - 6)  # the pktgen header is the first 6 bytes
        self.assertEqual(len(buf["buffer"]), 1514 - 6)
        self.assertEqual(bytes(buf["buffer"][:8]), bytes([0x02, 0x74, 0x62, 1, 0, 136, 0x88, 0xB5]))
        cfg, enable = self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_one_shot")[-2:]
        self.assertEqual(enable, {"pipe": 0, "app_id": 1, "app_enable": True})
        for k, v in {"app_id": 1, "pipe": 0, "app_enable": False, "pkt_len": 1508, "pkt_buffer_offset": buf["pkt_buffer_offset"],
                     "pipe_local_source_port": 68, "batch_count_cfg": 9, "packets_per_batch_cfg": 99,
                     "timer_nanosec": 1000, "ipg": 1000, "ibg": 1000, "ibg_jitter": 0, "ipg_jitter": 0, "pkt_counter": 0}.items():
            self.assertEqual(cfg[k], v, k)
        deadline = time.monotonic() + 5
        seen = []
        while True:
            st = self.ok("pktgen.status", {"app_id": 1})
            seen.append(st["packets"])
            if st["done"] or time.monotonic() > deadline:
                break
            time.sleep(0.0002)
        self.assertEqual(st, {"enabled": False, "packets": 1000, "done": True})
        self.assertEqual(seen, sorted(seen))
        # Done: it starts again, from zero; running, it does not.
        self.ok("pktgen.start", self.pktgen(timer_ns=10**6, batches=1000))
        st = self.ok("pktgen.status", {"app_id": 1})
        self.assertTrue(st["enabled"] and not st["done"] and st["packets"] < 1000, st)
        self.assertIn("stop it first", self.fails("bfrt", "pktgen.start", self.pktgen()))
        self.ok("pktgen.stop", {"app_id": 1})
        stopped = self.ok("pktgen.status", {"app_id": 1})
        self.assertFalse(stopped["enabled"])
        time.sleep(0.005)
        self.assertEqual(self.ok("pktgen.status", {"app_id": 1})["packets"], stopped["packets"])

    def test_pktgen_buffer(self):
        self.add_port(136)
        cell = bytes([0x02, 0, 0, 0, 0, 7, 0x88, 0xB6]) + bytes(range(1, 19))
        self.ok("pktgen.start", self.pktgen(app_id=2, pkt_len=256, batches=1, packets_per_batch=4, buffer_hex=cell.hex()))
        buf = self.bfrt.calls_to("tf1.pktgen.pkt_buffer", "mod")[-1]
        self.assertEqual(buf["pkt_buffer_size"], 250)
        self.assertEqual(bytes(buf["buffer"]), cell + bytes(250 - len(cell)))
        off = buf["pkt_buffer_offset"]
        self.assertEqual(bytes(self.bfrt.pkt_buffer[0][off:off + len(cell)]), cell)
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_one_shot")[-2]["pkt_len"], 250)
        self.ok("pktgen.stop", {"app_id": 2})
        # Bad buffers: not hex, odd, upper case, longer than the packet.
        for bad in ("zz", "abc", cell.hex().upper(), "00" * 59):
            self.fails("bad_request", "pktgen.start", self.pktgen(app_id=3, pkt_len=64, buffer_hex=bad))
        self.ok("pktgen.start", self.pktgen(app_id=3, pkt_len=64, batches=1, packets_per_batch=1, buffer_hex="00" * 58))

    def test_pktgen_pipe_and_slots(self):
        self.add_port(136)
        self.ok("pktgen.start", self.pktgen(app_id=3, dev_port=196, pkt_len=64, batches=1, packets_per_batch=1))
        buf = self.bfrt.calls_to("tf1.pktgen.pkt_buffer", "mod")[-1]
        self.assertEqual((buf["pipe"], buf["pkt_buffer_offset"]), (1, 3 * 2048))
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_one_shot")[-2]["pipe_local_source_port"], 68)
        deadline = time.monotonic() + 5
        while not self.ok("pktgen.status", {"app_id": 3})["done"] and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.app_cfg", "get")[-1]["pipe"], 1)
        self.assertEqual(self.ok("pktgen.status", {"app_id": 3})["packets"], 1)
        # A jumbo frame does not fit a slot: from the buffer's start.
        self.ok("pktgen.start", self.pktgen(app_id=4, pkt_len=9000, batches=1, packets_per_batch=1))
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.pkt_buffer", "mod")[-1]["pkt_buffer_offset"], 0)

    def test_pktgen_errors(self):
        self.add_port(136)
        self.fails("not_found", "pktgen.status", {"app_id": 9})
        self.fails("not_found", "pktgen.stop", {"app_id": 8})
        self.fails("not_found", "pktgen.start", self.pktgen(app_id=8))
        self.fails("bad_request", "pktgen.status", {})
        self.fails("bad_request", "pktgen.start", self.pktgen(pkt_len=20))
        self.fails("bad_request", "pktgen.start", self.pktgen(timer_ns=0))
        self.fails("bad_request", "pktgen.start", self.pktgen(ibg_jitter_ns=-1))
        self.fails("bad_request", "pktgen.start", self.pktgen(ibg_jitter_ns=1 << 32))
        self.fails("bad_request", "pktgen.start", self.pktgen(timer_ns=1 << 32))
        self.fails("bad_request", "pktgen.start", self.pktgen(batches=0))
        self.fails("bad_request", "pktgen.start", self.pktgen(packets_per_batch=65537))
        self.fails("bfrt", "pktgen.start", self.pktgen(dev_port=60))  # not a generator port
        self.assertEqual(self.ok("pktgen.status", {"app_id": 1})["packets"], 0)

    def test_pktgen_jitter(self):
        self.add_port(136)
        self.ok("pktgen.start", self.pktgen(app_id=5, timer_ns=1, ibg_jitter_ns=236, packets_per_batch=1))
        cfg = self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_one_shot")[-2]
        self.assertEqual((cfg["ibg"], cfg["ibg_jitter"], cfg["ipg_jitter"]), (1, 236, 0))

    # ---- the protocol ----

    def test_unknown_op_and_bad_args(self):
        self.assertIn("reboot", self.fails("bad_request", "reboot"))
        self.fails("bad_request", "reg.get", [1, 2])
        self.fails("bad_request", "port.status", {})
        r = self.c.call("hello", None)
        self.assertTrue(r["ok"])

    def test_malformed_lines_keep_the_connection(self):
        for bad in (b"not json\n", b"\xff\xfe\n", b"[1,2]\n", b'{"id": "x", "op": "hello"}\n', b'{"id": 5}\n'):
            self.c.sock.sendall(bad)
            r = self.c.recv()
            self.assertFalse(r["ok"], bad)
            self.assertEqual(r["error"]["kind"], "bad_request", bad)
            self.assertEqual(r["id"], 5 if bad.startswith(b'{"id": 5') else 0, bad)
        self.c.sock.sendall(b"\n  \n")  # blank lines are skipped
        self.assertEqual(self.ok("hello")["program"], "sender")

    def test_overlong_line_closes(self):
        self.c.sock.sendall(b"x" * (testbed_agent.MAX_LINE + 10))
        r = self.c.recv()
        self.assertEqual(r["error"]["kind"], "bad_request")
        with self.assertRaises((EOFError, ConnectionError)):
            self.c.recv()
        self.assertTrue(self.ok("hello", c=self.connect()))

    def test_pipelining(self):
        self.add_port(136)
        self.bfrt.set_counter(136, "$FramesReceivedOK", 5)
        ops = [("hello", None), ("reg.set", {"name": SEQ, "index": 1, "value": 9}), ("reg.get", {"name": SEQ, "index": 1}),
               ("nope", {}), ("port.stat", {"dev_port": 136}), ("reg.get", {"name": "SwitchEgress.x", "index": 1}), ("time", None)]
        lines = b"".join((json.dumps({"id": 100 + i, "op": op, "args": a}) + "\n").encode() for i, (op, a) in enumerate(ops * 5))
        self.c.sock.sendall(lines)
        for i in range(len(ops) * 5):
            r = self.c.recv()
            self.assertEqual(r["id"], 100 + i)
            op = ops[i % len(ops)][0]
            self.assertEqual(r["ok"], op not in ("nope", "reg.get") or (op == "reg.get" and i % len(ops) == 2), r)
            if i % len(ops) == 2:
                self.assertEqual(r["result"]["values"], [9] * 4)
            if op == "port.stat":
                self.assertEqual(r["result"]["counters"]["$FramesReceivedOK"], 5)

    def test_connections_are_serialized(self):
        # bfrt_python is not thread-safe; the fake complains when entered
        # twice at once.
        self.bfrt.call_delay = 0.002
        errors = []

        def worker(n):
            c = Client(self.srv.port)
            try:
                for i in range(15):
                    r = c.call("reg.set", {"name": SEQ, "index": n, "value": i})
                    r2 = c.call("reg.get", {"name": SEQ, "index": n})
                    if not r["ok"] or not r2["ok"] or r2["result"]["values"][0] != i:
                        errors.append((r, r2))
            finally:
                c.close()

        ts = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertEqual(self.bfrt.concurrent_calls, 0)

    def test_internal_error_keeps_serving(self):
        self.bfrt.fail_next_call(ZeroDivisionError("boom"))
        with mock.patch.object(testbed_agent, "_log"):
            msg = self.fails("internal", "reg.get", {"name": SEQ, "index": 0})
        self.assertIn("boom", msg)
        self.bfrt.fail_next_call(fake_bfrt.BfRtTableError("Error: table_entry_get failed [Not ready]", None, 1))
        self.assertIn("Not ready", self.fails("bfrt", "reg.get", {"name": SEQ, "index": 0}))
        self.assertEqual(self.ok("reg.get", {"name": SEQ, "index": 0})["values"], [0] * 4)

    def test_client_disconnect(self):
        c = self.connect()
        c.send("time.wait", {"until_ns": time.time_ns() + 50 * 10**6})
        c.sock.close()
        time.sleep(0.1)
        self.assertEqual(self.ok("hello")["agent"], "testbed-bfrt-agent")


class SetupTest(AgentBase):
    """The fixed-function setup a program relies on (LinkGuardian's):
    mirror sessions, PRE nodes and groups, PFC, a queue's PFC class, the
    periodic timer, CPU packet-out, and the port manager's FEC counters."""

    def test_mirror(self):
        s = {"sid": 0x108, "direction": "EGRESS", "ucast_egress_port": 196, "egress_port_queue": 1, "max_pkt_len": 16384}
        self.ok("mirror.add", s)
        call = self.bfrt.calls_to("mirror.cfg", "add_with_normal")[-1]
        self.assertEqual(call, dict(s, session_enable=True, ucast_egress_port_valid=True))
        self.assertEqual(self.ok("mirror.get", {"sid": 0x108}), dict(s, session_enable=True))
        self.assertIn("Already exists", self.fails("bfrt", "mirror.add", s))
        self.fails("bad_request", "mirror.add", dict(s, direction="SIDEWAYS"))
        self.fails("bad_request", "mirror.add", dict(s, sid=0))
        self.ok("mirror.del", {"sid": 0x108})
        self.fails("not_found", "mirror.get", {"sid": 0x108})
        self.fails("not_found", "mirror.del", {"sid": 0x108})

    def test_pre(self):
        self.fails("not_found", "pre.mgid.add", {"mgid": 2, "node_ids": [10]})
        for n in (10, 11):
            self.ok("pre.node.add", {"node_id": n, "rid": n - 10, "dev_ports": [136]})
        self.assertEqual(self.bfrt.calls_to("pre.node", "add")[-1],
                         {"MULTICAST_NODE_ID": 11, "MULTICAST_RID": 1, "MULTICAST_LAG_ID": [], "DEV_PORT": [136]})
        self.assertEqual(self.ok("pre.node.get", {"node_id": 11}), {"node_id": 11, "rid": 1, "dev_ports": [136]})
        self.ok("pre.mgid.add", {"mgid": 2, "node_ids": [10, 11]})
        self.assertEqual(self.bfrt.calls_to("pre.mgid", "add")[-1],
                         {"MGID": 2, "MULTICAST_NODE_ID": [10, 11], "MULTICAST_NODE_L1_XID_VALID": [False, False], "MULTICAST_NODE_L1_XID": [0, 0]})
        self.assertEqual(self.ok("pre.mgid.get", {"mgid": 2}), {"mgid": 2, "node_ids": [10, 11]})
        self.fails("bfrt", "pre.node.del", {"node_id": 10})  # the group holds it
        self.ok("pre.mgid.del", {"mgid": 2})
        self.ok("pre.node.del", {"node_id": 10})
        self.fails("not_found", "pre.node.get", {"node_id": 10})
        self.fails("not_found", "pre.mgid.get", {"mgid": 2})
        self.fails("bad_request", "pre.node.add", {"node_id": 12, "rid": 0, "dev_ports": "136"})

    def test_pre_group_reads_back_in_node_handle_order(self):
        # Handles go to the lowest free: 20 gets 0, 10 gets 1, 30 gets 2;
        # 20 deleted frees 0, which 40 then gets.
        for n in (20, 10, 30):
            self.ok("pre.node.add", {"node_id": n, "rid": 1, "dev_ports": [136]})
        self.ok("pre.node.del", {"node_id": 20})
        self.ok("pre.node.add", {"node_id": 40, "rid": 1, "dev_ports": [136]})
        self.ok("pre.mgid.add", {"mgid": 3, "node_ids": [10, 30, 40]})
        self.assertEqual(self.ok("pre.mgid.get", {"mgid": 3}), {"mgid": 3, "node_ids": [40, 10, 30]})
        # The L1 XIDs go with their nodes.
        self.bfrt.pre.mgid.add(MGID=4, MULTICAST_NODE_ID=[10, 30, 40], MULTICAST_NODE_L1_XID_VALID=[True, False, True],
                               MULTICAST_NODE_L1_XID=[1, 2, 3])
        e = self.bfrt.pre.mgid.get(MGID=4, print_ents=False)
        self.assertEqual(e.data[b"$MULTICAST_NODE_ID"], [40, 10, 30])
        self.assertEqual(e.data[b"$MULTICAST_NODE_L1_XID_VALID"], [True, True, False])
        self.assertEqual(e.data[b"$MULTICAST_NODE_L1_XID"], [3, 1, 2])

    def test_pfc(self):
        self.fails("not_found", "port.pfc", {"dev_port": 136})
        self.add_port(136)
        self.assertEqual(self.ok("port.pfc", {"dev_port": 136}), {"previous": {"rx_map": 0, "tx_map": 0}, "rx_map": 0, "tx_map": 0})
        r = self.ok("port.pfc", {"dev_port": 136, "rx_map": 1, "tx_map": 0})
        self.assertEqual(r, {"previous": {"rx_map": 0, "tx_map": 0}, "rx_map": 1, "tx_map": 0})
        self.assertEqual(self.bfrt.calls_to("port.port", "mod")[-1], {"DEV_PORT": 136, "RX_PFC_EN_MAP": 1, "TX_PFC_EN_MAP": 0})
        self.assertEqual(self.ok("port.pfc", {"dev_port": 136})["rx_map"], 1)
        self.fails("bad_request", "port.pfc", {"dev_port": 136, "rx_map": 1})
        self.fails("bad_request", "port.pfc", {"dev_port": 136, "rx_map": 256, "tx_map": 0})
        # A queue's PFC class, keyed as tm.queue.sched keys it.
        self.assertEqual(self.ok("tm.queue.pfc_cos", {"dev_port": 137, "qid": 7, "cos": 7}), {"cos": 0})
        self.assertEqual(self.bfrt.calls_to("tf1.tm.queue.cfg", "mod")[-1], {"pipe": 1, "pg_id": 2, "pg_queue": 15, "pfc_cos": 7})
        self.assertEqual(self.ok("tm.queue.pfc_cos", {"dev_port": 137, "qid": 7}), {"cos": 7})
        self.fails("bad_request", "tm.queue.pfc_cos", {"dev_port": 137, "qid": 8})

    def test_pktgen_periodic(self):
        self.add_port(196)
        self.add_port(136)
        args = {"app_id": 7, "dev_port": 196, "egress_port": 136, "pkt_len": 64, "timer_ns": 100,
                "batches": 1, "packets_per_batch": 1, "trigger": "timer_periodic"}
        self.fails("bad_request", "pktgen.start", dict(args, trigger="port_down"))
        self.ok("pktgen.start", args)
        self.assertEqual(len(self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_periodic")), 2)
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_one_shot"), [])
        time.sleep(0.01)
        st = self.ok("pktgen.status", {"app_id": 7})
        self.assertTrue(st["enabled"] and not st["done"], st)
        self.ok("pktgen.stop", {"app_id": 7})
        self.assertEqual(self.bfrt.calls_to("tf1.pktgen.app_cfg", "mod_with_trigger_timer_periodic")[-1],
                         {"pipe": 1, "app_id": 7, "app_enable": False})
        self.assertFalse(self.ok("pktgen.status", {"app_id": 7})["enabled"])

    def test_packet_out(self):
        frame = bytes([0, 0, 0, 0, 0x11, 0x05]) + bytes(54)
        with mock.patch.dict(os.environ, {"TESTBED_CPU_IFACE": "ens1"}):
            self.ok("packet.out", {"frame_hex": frame.hex()})
        self.assertEqual(self.bfrt.testbed_platform.sent, [("ens1", frame)])
        self.fails("bad_request", "packet.out", {"frame_hex": "00" * 20})
        self.fails("bad_request", "packet.out", {"frame_hex": "ZZ"})

    def test_fec_stat(self):
        self.fails("not_found", "port.fec_stat", {"dev_port": 136})
        self.add_port(136, fec="BF_FEC_TYP_RS")
        self.bfrt.testbed_platform.rs[136] = {"fec_corr_cnt": 17, "fec_uncorr_cnt": 2, "fec_ser_lane_2": 5}
        r = self.ok("port.fec_stat", {"dev_port": 136})
        self.assertGreater(r.pop("time_ns"), 0)
        self.assertEqual(r, {"hi_ser": False, "fec_align_status": True, "fec_corr_cnt": 17, "fec_uncorr_cnt": 2,
                             "fec_ser_lane_0": 0, "fec_ser_lane_1": 0, "fec_ser_lane_2": 5, "fec_ser_lane_3": 0})
        # Firecode: the blocks of every virtual lane of the port, summed.
        self.add_port(144, speed="BF_SPEED_40G", fec="BF_FEC_TYP_FC")
        for vl in range(4):
            self.bfrt.testbed_platform.fc[(144, vl)] = (vl != 2, 10 * vl, vl)
        r = self.ok("port.fec_stat", {"dev_port": 144})
        self.assertEqual((r["fec_corr_cnt"], r["fec_uncorr_cnt"], r["fec_align_status"]), (60, 6, False), r)
        self.add_port(152, fec="BF_FEC_TYP_NONE")
        r = self.ok("port.fec_stat", {"dev_port": 152})
        self.assertEqual((r["fec_corr_cnt"], r["fec_uncorr_cnt"], r["fec_align_status"]), (0, 0, False), r)
        self.assertFalse([c for t, _, c in self.bfrt.calls if t.startswith("bf_port_") and c.get("dev_port") == 152])

    def test_sde_platform_without_the_sde(self):
        # Outside bf_switchd the C API is not there: a bfrt error that says so.
        with self.assertRaisesRegex(testbed_agent.AgentError, "inside bf_switchd"):
            testbed_agent.SdePlatform().rs_fec(0, 136)


class BfrtThreadTest(AgentBase):
    """With a BfrtThread every bfrt call runs on the thread that serves it
    (the interpreter's, on a switch), whichever connection asked."""

    def server_options(self):
        self.runner = testbed_agent.BfrtThread()
        self.bfrt_thread = threading.Thread(target=self.runner.serve)
        self.bfrt_thread.start()
        self.addCleanup(self.bfrt_thread.join, 30)
        self.addCleanup(self.runner.stop)
        return {}

    def setUp(self):
        AgentBase.setUp(self)
        self.srv.agent.runner = self.runner

    def test_calls_run_on_one_thread(self):
        errors = []

        def worker(n):
            c = Client(self.srv.port)
            try:
                for i in range(10):
                    r = c.call("reg.set", {"name": SEQ, "index": n, "value": i})
                    r2 = c.call("reg.get", {"name": SEQ, "index": n})
                    if not r["ok"] or not r2["ok"] or r2["result"]["values"][0] != i:
                        errors.append((r, r2))
            finally:
                c.close()

        ts = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join(30)
        self.assertEqual(errors, [])
        self.assertEqual(self.bfrt.threads, {self.bfrt_thread.ident})
        # A failing call's error reaches its connection, not the bfrt thread.
        self.fails("not_found", "reg.get", {"name": "SwitchEgress.nope", "index": 0})
        self.assertTrue(self.bfrt_thread.is_alive())


class BfrtThreadStopTest(unittest.TestCase):
    """The bfrt thread sleeps in its queue until a call or stop() comes: it
    never wakes on a timer to look for a stop, and stop() ends it at once
    (a switch's agent stopping, a test's teardown, wait on that thread)."""

    def test_sleeps_until_called_or_stopped(self):
        gets = []

        class Recording(queue.Queue):
            def get(self, block=True, timeout=None):
                gets.append((block, timeout))
                return queue.Queue.get(self, block, timeout)

        runner = testbed_agent.BfrtThread()
        runner._q = Recording()
        t = threading.Thread(target=runner.serve)
        t.start()
        self.addCleanup(t.join, 30)
        self.addCleanup(runner.stop)
        deadline = time.monotonic() + 30
        while runner._owner is None and time.monotonic() < deadline:
            time.sleep(0.001)
        self.assertIs(runner._owner, t)
        self.assertEqual(runner.run(threading.get_ident, (), {}), t.ident)
        runner.stop()
        t.join(30)
        self.assertFalse(t.is_alive(), "serve() still running after stop()")
        # One blocking get for the call and one for the stop: no timed wake-ups.
        self.assertEqual(gets, [(True, None), (True, None)])
        # A call after the stop fails at once instead of waiting on a thread
        # that is gone.
        with self.assertRaises(testbed_agent.AgentError) as cm:
            runner.run(threading.get_ident, (), {})
        self.assertEqual(cm.exception.kind, "internal")


class AuthTest(AgentBase):
    """Every connection presents the run's token first; nothing else is
    served before it."""

    def refused(self, c):
        r = c.recv()
        self.assertFalse(r["ok"], r)
        self.assertEqual(r["error"]["kind"], "unauthorized", r)
        with self.assertRaises((EOFError, ConnectionError)):
            c.recv()

    def test_no_token(self):
        c = self.connect(token=None)
        c.send("hello")
        self.refused(c)

    def test_wrong_token(self):
        for tok in ("f" * 64, TOKEN[:-1], "", 7):
            c = self.connect(token=None)
            c.send("auth", {"token": tok})
            self.refused(c)

    def test_malformed_first_line(self):
        c = self.connect(token=None)
        c.sock.sendall(b"not json\n")
        self.refused(c)

    def test_no_token_configured_refuses_all(self):
        self.srv.token = lambda: None
        c = self.connect(token=None)
        c.send("auth", {"token": TOKEN})
        self.refused(c)

    def test_token_file(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        p = os.path.join(d, "t")
        fd = os.open(p, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b" tok\n")
        os.close(fd)
        self.assertEqual(testbed_agent.read_token(p), ["tok"])
        # Each driver adds its own line; every one of them is accepted.
        with open(p, "a") as f:
            f.write("other\n\n")
        self.assertEqual(testbed_agent.read_token(p), ["tok", "other"])
        line = json.dumps({"id": 1, "op": "auth", "args": {"token": "other"}}).encode()
        self.assertIsNone(testbed_agent.check_auth(lambda: testbed_agent.read_token(p), line))
        bad = json.dumps({"id": 1, "op": "auth", "args": {"token": "third"}}).encode()
        self.assertIsNotNone(testbed_agent.check_auth(lambda: testbed_agent.read_token(p), bad))
        os.chmod(p, 0o644)
        self.assertIsNone(testbed_agent.read_token(p))
        self.assertIsNone(testbed_agent.read_token(os.path.join(d, "none")))

    def test_token_beside_the_agent(self):
        # A daemon started by someone else (no TESTBED_AGENT_TOKEN_FILE) or
        # as root (its ~ elsewhere) finds the run's token beside the agent,
        # where the driver writes both.
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        agent = os.path.join(d, "testbed_agent.py")
        beside = os.path.join(d, "agent_token")
        fd = os.open(beside, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, b"run-token\n")
        os.close(fd)
        with mock.patch.dict(os.environ, {"HOME": os.path.join(d, "elsewhere")}):
            files = testbed_agent.token_files(None, agent)
            self.assertEqual(files[0], beside)
            self.assertEqual(testbed_agent.read_tokens(files), ["run-token"])
            named = os.path.join(d, "named")
            fd = os.open(named, os.O_WRONLY | os.O_CREAT, 0o600)
            os.write(fd, b"other-run\n")
            os.close(fd)
            files = testbed_agent.token_files(named, agent)
            self.assertEqual(testbed_agent.read_tokens(files), ["other-run", "run-token"])
            self.assertIsNone(testbed_agent.read_tokens(testbed_agent.token_files(None, os.path.join(d, "sub", "a.py"))))


class LimitsTest(AgentBase):
    def server_options(self):
        return {"idle_timeout": 0.3, "max_connections": 3}

    def test_idle_connection_closed(self):
        c = self.connect()
        start = time.monotonic()
        with self.assertRaises((EOFError, ConnectionError)):
            c.recv()
        self.assertLess(time.monotonic() - start, 5)
        self.assertTrue(self.ok("hello", c=self.connect()))

    def test_connection_cap(self):
        self.connect()
        self.connect()  # with self.c: three
        extra = Client(self.srv.port, token=None)
        self.clients.append(extra)
        r = extra.recv()
        self.assertEqual(r["error"]["kind"], "busy", r)
        for c in self.clients[:3]:
            c.close()
        self.clients = []
        deadline = time.monotonic() + 5
        while True:  # the slots free as the handlers notice the closes
            try:
                self.assertTrue(self.ok("hello", c=self.connect()))
                break
            except (AssertionError, EOFError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


class LoadedLikeBfrtPython(unittest.TestCase):
    """run_fake.py loads the agent as bfrt_python does (exec of the file's
    text inside a function): it must start and serve."""

    def test_run_fake(self):
        d = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, d)
        tok = os.path.join(d, "agent_token")
        fd = os.open(tok, os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, (TOKEN + "\n").encode())
        os.close(fd)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", TESTBED_AGENT_TOKEN_FILE=tok)
        p = subprocess.Popen([sys.executable, os.path.join(HERE, "run_fake.py"), "--program", "receiver",
                              "--queue", "1:17:9:40:90:3", "--counter", "136:$FramesReceivedOK:12"],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
        try:
            line = p.stdout.readline().decode()
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            self.assertIsNotNone(m, line + p.stdout.read(2000).decode() if p.poll() is not None else line)
            port = int(m.group(1))
            with self.assertRaisesRegex(AssertionError, "unauthorized"):
                Client(port, token="f" * 64).close()
            c = Client(port)
            try:
                r = c.call("hello")
                self.assertEqual(r["result"]["program"], "receiver", r)
                r = c.call("tm.queue", {"pipe": 1, "pg_id": 17, "pg_queue": 9})
                self.assertEqual(r["result"]["usage_cells"], 40, r)
                c.call("port.add", {"dev_port": 136, "speed": "BF_SPEED_100G", "fec": "BF_FEC_TYP_RS", "enable": True})
                r = c.call("port.stat", {"dev_port": 136})
                self.assertEqual(r["result"]["counters"]["$FramesReceivedOK"], 12, r)
                r = c.call("table.get", {"name": PROTECT})
                self.assertEqual(r["result"], {"entries": []}, r)
            finally:
                c.close()
        finally:
            p.kill()
            p.wait(10)
            p.stdout.close()

    def test_import_starts_nothing(self):
        self.assertIsNone(testbed_agent._bfrt)


if __name__ == "__main__":
    unittest.main()
