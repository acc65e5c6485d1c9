"""The testbed switch agent: the agent protocol (PROTOCOL.md) served from
inside the Intel SDE's bfrt_python.

The driver installs this file on the switch and starts it with

    TESTBED_AGENT_PORT=<port> TESTBED_AGENT_TOKEN_FILE=<file> $SDE/run_bfshell.sh -b testbed_agent.py

bfrt_python runs it with the global ``bfrt`` object (the BF Runtime command
tree) defined. The agent listens on 127.0.0.1 only, one thread per
connection, and answers each JSON line with one JSON line, in order, once
the connection has presented the run's token (read from the 0600 file
$TESTBED_AGENT_TOKEN_FILE, default ~/.testbed/agent_token). Every
BF Runtime call is made under one lock: bfrt_python's session and its
current target (pipe) are shared by all connections.

Everything here takes the bfrt object as a parameter, so the tests import
this module and serve a stand-in (fake_bfrt.py); importing it starts
nothing. Python 3.8 (older SDEs) and later, standard library only.
"""

import ctypes
import hmac
import json
import keyword
import os
import queue
import socket
import socketserver
import sys
import threading
import time
import traceback

AGENT = "testbed-bfrt-agent"
VERSION = "1"
DEFAULT_PORT = 9091

# A request line longer than this is refused (and the connection closed:
# there is no telling where the next request starts).
MAX_LINE = 1 << 20

# A connection that sends nothing for this long is closed; at most this many
# connections are served at once (the driver keeps one).
IDLE_TIMEOUT_S = 300
MAX_CONNECTIONS = 8

# reg.range reads at most this many indices (the largest Stardust register,
# reg_credit, has 4096: SD_MAX_VOQS).
MAX_REG_RANGE = 4096

# time.wait waits at most this far ahead of the switch's clock.
MAX_WAIT_NS = 60 * 10**9

SPEEDS = ("BF_SPEED_10G", "BF_SPEED_25G", "BF_SPEED_40G", "BF_SPEED_50G", "BF_SPEED_100G")
FECS = ("BF_FEC_TYP_NONE", "BF_FEC_TYP_FC", "BF_FEC_TYP_RS")

# Children of the bfrt root that are not P4 programs (bfrtcli's fixed nodes).
FIXED_NODES = ("port", "pre", "mirror", "pktgen", "tf1", "tf2", "tf3")

# bf_status_t values that mean "no such object" (BF_OBJECT_NOT_FOUND) and
# "bad argument" (BF_INVALID_ARG), as BfRtTableError.sts carries them.
BF_INVALID_ARG = 3
BF_OBJECT_NOT_FOUND = 6

# Tofino 1 packet generator: 8 applications; a 6-byte pktgen header that the
# generator puts in front of the buffer's bytes; a 16 KiB packet buffer per
# pipe, written at 16-byte aligned offsets; 16-bit batch and packet counts
# programmed as count - 1; 32-bit timers in ns.
PKTGEN_APPS = 8
PKTGEN_HEADER = 6
PKT_BUFFER_BYTES = 16384
PKT_BUFFER_SLOT = 2048
PKTGEN_MAX_COUNT = 1 << 16
PKTGEN_MAX_TIMER_NS = (1 << 32) - 1

# The frame the generator sends: a locally administered source MAC that
# names the application and the egress port, and the IEEE local
# experimental EtherType. The destination MAC is where the pktgen header goes.
PKTGEN_ETHERTYPE = 0x88B5

# Mirror sessions and the packet replication engine of Tofino 1
# (bf_rt_mirror_tf1.json: $sid 1..1023; bf_rt_pre_tf1.json: $MGID 1..65535).
MAX_MIRROR_SID = 1023
MAX_MGID = 65535
MIRROR_DIRECTIONS = ("INGRESS", "EGRESS", "BOTH")
MAX_PKT_LEN = 16384

# A frame sent from the CPU port: without FCS.
MIN_FRAME, MAX_FRAME = 60, 9216

# The CPU port's network interface (the SDE's kernel packet driver; the
# LinkGuardian artifact sends on the CPU PCIe port's netdev):
# $TESTBED_CPU_IFACE, else this.
DEFAULT_CPU_IFACE = "bf_pci0"

PKTGEN_TRIGGERS = ("timer_one_shot", "timer_periodic")


class AgentError(Exception):
    """An operation's failure, with its protocol error kind."""

    def __init__(self, kind, message):
        Exception.__init__(self, message)
        self.kind = kind
        self.message = message


def bad_request(fmt, *args):
    return AgentError("bad_request", fmt % args if args else fmt)


def not_found(fmt, *args):
    return AgentError("not_found", fmt % args if args else fmt)


def bfrt_failure(fmt, *args):
    return AgentError("bfrt", fmt % args if args else fmt)


def is_bfrt_error(exc):
    """Whether exc was raised by BF Runtime (bfrtTable.BfRtTableError,
    bfrtInfo.BfRtInfoError); their status is exc.sts."""
    return type(exc).__name__ in ("BfRtTableError", "BfRtInfoError")


# ---- arguments ----

_MISSING = object()


def arg_int(args, name, default=_MISSING, lo=None, hi=None):
    v = args.get(name, _MISSING)
    if v is _MISSING or v is None:
        if default is _MISSING:
            raise bad_request("missing argument %r", name)
        return default
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (isinstance(v, float) and not v.is_integer()):
        raise bad_request("argument %r: expected an integer, got %s", name, json.dumps(v))
    v = int(v)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise bad_request("argument %r: %d outside %s..%s", name, v, lo, hi)
    return v


def arg_bool(args, name, default=_MISSING):
    v = args.get(name, _MISSING)
    if v is _MISSING or v is None:
        if default is _MISSING:
            raise bad_request("missing argument %r", name)
        return default
    if not isinstance(v, bool):
        raise bad_request("argument %r: expected true or false, got %s", name, json.dumps(v))
    return v


def arg_str(args, name):
    v = args.get(name, _MISSING)
    if v is _MISSING or v is None:
        raise bad_request("missing argument %r", name)
    if not isinstance(v, str):
        raise bad_request("argument %r: expected a string, got %s", name, json.dumps(v))
    return v


def arg_int_map(args, name):
    """An object of field -> integer (absent or null: empty)."""
    v = args.get(name)
    if v is None:
        return {}
    if not isinstance(v, dict):
        raise bad_request("argument %r: expected an object of integers, got %s", name, json.dumps(v))
    out = {}
    for k, x in v.items():
        if not k.isidentifier() or k.startswith("_"):
            raise bad_request("argument %r: field name %r", name, k)
        out[k] = arg_int(v, k)
    return out


def arg_int_list(args, name, lo=None, hi=None):
    v = args.get(name)
    if not isinstance(v, list):
        raise bad_request("argument %r: expected a list of integers, got %s", name, json.dumps(v))
    return [arg_int({name: x}, name, lo=lo, hi=hi) for x in v]


def arg_hex(args, name):
    """Bytes from a lowercase hex string."""
    v = arg_str(args, name)
    if len(v) % 2 or any(c not in "0123456789abcdef" for c in v):
        raise bad_request("argument %r: expected lowercase hex, an even number of digits", name)
    return bytes.fromhex(v)


def check_identifier(what, name):
    if not name.isidentifier() or name.startswith("_"):
        raise bad_request("%s %r is not a name", what, name)
    return name


# ---- BF Runtime names and values ----

# bfrtcli turns a field's full name into a keyword parameter: these
# replacements, then the part after the last dot, or more parts where two
# fields share it (BFLeaf._build_names, param_names below).
_PARAM_REPLACE = (("$", ""), (" & ", "_"), ("-", "_"), (":", "_"), ("[", "_"), ("]", "_"), ("__", "_"))

# A key field of these match types is two parameters (BFLeaf._make_core_method_strs).
_MATCH_PARAMS = {
    "TERNARY": ("", "_mask"),
    "LPM": ("", "_p_length"),
    "RANGE": ("_start", "_end"),
    "OPTIONAL": ("", "_is_valid"),
}


def text(name):
    return name.decode("ascii", "replace") if isinstance(name, (bytes, bytearray)) else str(name)


def _short_names(names, collide, ridx, prefix):
    """One pass of bfrtcli's BFLeaf._build_names: each full name's last
    ridx parts (dots become '_'), a Python keyword prefixed; and whether
    two names met (-1), one of them whole (-2), or none (0)."""
    out, seen, collision = {}, dict(collide), 0
    for full in names:
        s = text(full)
        for a, b in _PARAM_REPLACE:
            s = s.replace(a, b)
        cidx = len(s)
        for _ in range(ridx):
            cidx = s.rfind(".", 0, cidx)
            if cidx == -1:
                break
        p = s[cidx + 1:].replace(".", "_")
        out[full] = p
        if p in seen:
            if cidx == -1:
                collision = -2
            if collision == 0:
                collision = -1
        seen[p] = 0
    for full, p in out.items():
        if keyword.iskeyword(p):
            # bfrtcli's add_prefix_to_entry: the prefix, then a counter
            # while the name is taken.
            q, n = prefix + p, 1
            while q in out.values():
                q, n = prefix + str(n) + p, n + 1
            out[full] = q
    return out, seen, collision


def _make_names(names, collide, ridx, prefix):
    """bfrtcli's BFLeaf._make_param_names: more parts until no two names
    meet (up to 20, where two equal names stop it)."""
    while True:
        out, seen, sts = _short_names(names, collide, ridx, prefix)
        if sts >= 0:
            return out, seen, ridx
        ridx += 1
        if ridx > 20 and sts == -2:
            return out, seen, ridx


def param_names(keys, data=()):
    """The keyword parameters bfrt_python's add_with_<action> takes for a
    table's key fields and the action's data fields (full names), as
    BFLeaf._make_core_method_strs makes them (open-p4studio bfrtcli.py):
    the part after the last dot, more parts joined by '_' where two key
    fields, or a data field and a key field, share it, the key's and the
    data's at the same depth. Two dicts, full name -> parameter."""
    kn, collide, kr = _make_names(keys, {}, 1, "key_")
    dn, _, dr = _make_names(data, collide, kr, "data_")
    tries = 0
    while kr != dr:
        kn, collide, kr = _make_names(keys, {}, dr, "key_")
        dn, _, dr = _make_names(data, collide, kr, "data_")
        tries += 1
        if tries >= 50:
            kn = {k: v + "_key" for k, v in kn.items()}
            dn = {k: v + "_data" for k, v in dn.items()}
            break
    return kn, dn


def action_name(full):
    """'SwitchEgress.protect' -> 'protect' (the add_with_<name> suffix)."""
    if full is None:
        return ""
    s = text(full)
    return s[s.rfind(".") + 1:].replace("$", "")


def as_int(v):
    """An integer for a counter or field value, or None for what has none
    (strings, lists, error strings bfrt_python puts in place of a value)."""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float) and v == v:
        return int(round(v))
    return None


def found(entry):
    """bfrt_python's get returns -1 (or None) instead of raising when the
    entry does not exist."""
    return entry is not None and not isinstance(entry, int) and hasattr(entry, "data")


def _log(msg):
    # In bfrt_python stdout is the bfshell connection (the driver sends it
    # to agent.log); it may be gone.
    try:
        print("testbed agent: %s" % msg, flush=True)
    except Exception:
        pass


# ---- the operations ----


class Agent:
    """The agent protocol over a bfrt object."""

    def __init__(self, bfrt, program=None, platform=None, runner=None):
        self.bfrt = bfrt
        self._program = program
        # What bfrt_python does not reach: the port manager's FEC counters
        # (C, through ctypes) and the CPU port's netdev (packet.out).
        self.platform = platform if platform is not None else SdePlatform()
        # The thread every bfrt call runs on (None: the caller's own).
        self.runner = runner
        self._lock = threading.Lock()  # every bfrt call
        self._state = threading.Lock()  # the fields below
        self._pktgen_pipe = {}  # app_id -> the pipe its generator runs in
        self._pktgen_trigger = {}  # app_id -> the trigger of its last start
        self.ops = {
            "hello": self.hello,
            "time": self.clock,
            "time.wait": self.time_wait,
            "port.add": self.port_add,
            "port.del": self.port_del,
            "port.status": self.port_status,
            "port.mode": self.port_mode,
            "port.tx_tstamp": self.port_tx_tstamp,
            "port.cut_through": self.port_cut_through,
            "port.stat": self.port_stat,
            "port.stat_clear": self.port_stat_clear,
            "tm.queue": self.tm_queue,
            "tm.queue.sched": self.tm_queue_sched,
            "reg.get": self.reg_get,
            "reg.set": self.reg_set,
            "reg.range": self.reg_range,
            "table.add": self.table_add,
            "table.mod": self.table_mod,
            "table.del": self.table_del,
            "table.clear": self.table_clear,
            "table.get": self.table_get,
            "pktgen.start": self.pktgen_start,
            "pktgen.stop": self.pktgen_stop,
            "pktgen.status": self.pktgen_status,
            "port.fec_stat": self.port_fec_stat,
            "port.pfc": self.port_pfc,
            "tm.queue.pfc_cos": self.tm_queue_pfc_cos,
            "mirror.add": self.mirror_add,
            "mirror.get": self.mirror_get,
            "mirror.del": self.mirror_del,
            "pre.node.add": self.pre_node_add,
            "pre.node.get": self.pre_node_get,
            "pre.node.del": self.pre_node_del,
            "pre.mgid.add": self.pre_mgid_add,
            "pre.mgid.get": self.pre_mgid_get,
            "pre.mgid.del": self.pre_mgid_del,
            "packet.out": self.packet_out,
        }

    # -- framing --

    def respond(self, line):
        """The response (a dict) to one request line (bytes)."""
        try:
            req = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            return error_response(0, "bad_request", "request is not JSON: %s" % e)
        if not isinstance(req, dict):
            return error_response(0, "bad_request", "request is not a JSON object")
        rid = req.get("id", 0)
        if isinstance(rid, bool) or not isinstance(rid, int):
            return error_response(0, "bad_request", "request id %s is not an integer" % json.dumps(rid))
        try:
            result = self.handle(req.get("op"), req.get("args"))
        except AgentError as e:
            return error_response(rid, e.kind, e.message)
        except Exception as e:
            if is_bfrt_error(e):
                kind = "not_found" if getattr(e, "sts", None) == BF_OBJECT_NOT_FOUND else "bfrt"
                return error_response(rid, kind, str(e) or type(e).__name__)
            _log("%s failed:\n%s" % (req.get("op"), traceback.format_exc()))
            return error_response(rid, "internal", "%s: %s" % (type(e).__name__, e))
        return {"id": rid, "ok": True, "result": result if result is not None else {}}

    def handle(self, op, args):
        if not isinstance(op, str):
            raise bad_request("request has no op")
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise bad_request("args of %s: expected an object", op)
        fn = self.ops.get(op)
        if fn is None:
            raise bad_request("unknown op %r", op)
        return fn(args)

    def call(self, fn, *args, **kwargs):
        """A bfrt call under the lock. A TypeError is a keyword the
        generated method does not take: the request's fault."""
        with self._lock:
            return self.call_held(fn, *args, **kwargs)

    def call_held(self, fn, *args, **kwargs):
        """A bfrt call by a caller that holds the lock, made on the bfrt
        thread (BfrtThread) when there is one."""
        try:
            if self.runner is not None:
                return self.runner.run(fn, args, kwargs)
            return fn(*args, **kwargs)
        except TypeError as e:
            if is_bfrt_error(e):
                raise
            raise bad_request("%s", e)

    # -- names --

    def program(self):
        """The P4 program loaded: $TESTBED_PROGRAM, else the first of
        bfrt.p4_programs_list, else the root's child that has a pipe."""
        if self._program:
            return self._program
        name = os.environ.get("TESTBED_PROGRAM", "")
        if not name:
            progs = getattr(self.bfrt, "p4_programs_list", None)
            if progs:
                name = text(progs[0])
        if not name:
            for n in sorted(dir(self.bfrt)):
                if n.startswith("_") or n in FIXED_NODES:
                    continue
                try:
                    child = getattr(self.bfrt, n)
                except Exception:
                    continue
                if getattr(child, "pipe", None) is not None:
                    name = n
                    break
        self._program = name
        return name

    def resolve(self, name, what):
        """bfrt.<program>.pipe.<Control>.<object> for "Control.object"."""
        parts = name.split(".")
        if parts and parts[0] == "pipe":
            parts = parts[1:]
        if not parts:
            raise bad_request("%s name %r", what, name)
        for p in parts:
            check_identifier(what + " name part", p)
        prog = self.program()
        if not prog:
            raise not_found("no P4 program is loaded")
        node = getattr(self.bfrt, prog, None)
        node = getattr(node, "pipe", None) if node is not None else None
        if node is None:
            raise not_found("bfrt.%s.pipe does not exist", prog)
        for p in parts:
            node = getattr(node, p, None)
            if node is None:
                raise not_found("bfrt.%s.pipe has no %s %r", prog, what, name)
        return node

    # -- hello, clock --

    def hello(self, args):
        with self._lock:
            prog = self.program()
        return {"agent": AGENT, "version": VERSION, "program": prog, "time_ns": time.time_ns()}

    def clock(self, args):
        return {"time_ns": time.time_ns()}

    def time_wait(self, args):
        until = arg_int(args, "until_ns")
        now = time.time_ns()
        if until - now > MAX_WAIT_NS:
            raise bad_request("until_ns is %.3f s ahead of the clock (at most 60 s)", (until - now) / 1e9)
        # Sleep without the lock: other connections go on meanwhile.
        while now < until:
            time.sleep((until - now) / 1e9)
            now = time.time_ns()
        return {"time_ns": now}

    # -- ports --

    def _port(self, dev):
        e = self.call(self.bfrt.port.port.get, DEV_PORT=dev, print_ents=False)
        return e if found(e) else None

    def port_add(self, args):
        dev = arg_int(args, "dev_port", lo=0)
        speed = arg_str(args, "speed")
        fec = arg_str(args, "fec")
        enable = arg_bool(args, "enable", True)
        # An unknown choice makes bfrt_python print an error and return
        # as if it had worked: check before.
        if speed not in SPEEDS:
            raise bad_request("speed %r (expected one of %s)", speed, ", ".join(SPEEDS))
        if fec not in FECS:
            raise bad_request("fec %r (expected one of %s)", fec, ", ".join(FECS))
        self.call(self.bfrt.port.port.add, DEV_PORT=dev, SPEED=speed, FEC=fec,
                  AUTO_NEGOTIATION="PM_AN_FORCE_DISABLE", PORT_ENABLE=enable)
        if self._port(dev) is None:
            raise bfrt_failure("port %d: port.add returned but the port is not there (see the agent's log)", dev)
        return {}

    def port_del(self, args):
        dev = arg_int(args, "dev_port", lo=0)
        if self._port(dev) is None:
            raise not_found("port %d is not added", dev)
        self.call(self.bfrt.port.port.delete, DEV_PORT=dev)
        return {}

    def port_status(self, args):
        dev = arg_int(args, "dev_port", lo=0)
        e = self._port(dev)
        if e is None:
            raise not_found("port %d is not added", dev)
        d = {text(k): v for k, v in e.data.items()}
        return {
            "dev_port": dev,
            "enabled": bool(d.get("$PORT_ENABLE", False)),
            "up": bool(d.get("$PORT_UP", False)),
            "speed": text(d.get("$SPEED", "")),
            "fec": text(d.get("$FEC", "")),
        }

    def port_mode(self, args):
        """Set an added port's speed and FEC, keeping its enable state; answer
        what it was before, so that the caller can put it back. $PORT has no
        documented in-place change of $SPEED, so a change is a delete and an
        add (as port.add does it); if the add fails the old mode is added
        back before the error is returned."""
        dev = arg_int(args, "dev_port", lo=0)
        speed = arg_str(args, "speed")
        fec = arg_str(args, "fec")
        if speed not in SPEEDS:
            raise bad_request("speed %r (expected one of %s)", speed, ", ".join(SPEEDS))
        if fec not in FECS:
            raise bad_request("fec %r (expected one of %s)", fec, ", ".join(FECS))
        prev = self.port_status({"dev_port": dev})
        before = {"speed": prev["speed"], "fec": prev["fec"], "enabled": prev["enabled"]}
        if prev["speed"] == speed and prev["fec"] == fec:
            return {"previous": before, "changed": False}
        self.call(self.bfrt.port.port.delete, DEV_PORT=dev)
        try:
            self.call(self.bfrt.port.port.add, DEV_PORT=dev, SPEED=speed, FEC=fec,
                      AUTO_NEGOTIATION="PM_AN_FORCE_DISABLE", PORT_ENABLE=prev["enabled"])
            now = self._port(dev)
            if now is None:
                raise bfrt_failure("port %d: port.add of %s %s returned but the port is not there", dev, speed, fec)
        except Exception:
            if self._port(dev) is None:
                self.call(self.bfrt.port.port.add, DEV_PORT=dev, SPEED=prev["speed"], FEC=prev["fec"],
                          AUTO_NEGOTIATION="PM_AN_FORCE_DISABLE", PORT_ENABLE=prev["enabled"])
            raise
        return {"previous": before, "changed": True}

    def port_tx_tstamp(self, args):
        """The MAC's transmit timestamp of the last frame that asked for one
        (a P4 program's capture_tstamp_on_tx): $PORT's read-only
        $TIMESTAMP_1588_VALID, _VALUE and _ID (bf_rt_port_tf1.json)."""
        dev = arg_int(args, "dev_port", lo=0)
        e = self._port(dev)
        if e is None:
            raise not_found("port %d is not added", dev)
        d = {text(k): v for k, v in e.data.items()}
        if "$TIMESTAMP_1588_VALID" not in d:
            raise bfrt_failure("port %d: $PORT has no $TIMESTAMP_1588_VALID field in this SDE", dev)
        value, ts_id = as_int(d.get("$TIMESTAMP_1588_VALUE", 0)), as_int(d.get("$TIMESTAMP_1588_ID", 0))
        if value is None or ts_id is None:
            raise bfrt_failure("port %d: $TIMESTAMP_1588 fields are not integers", dev)
        return {"valid": bool(d["$TIMESTAMP_1588_VALID"]), "value": value, "id": ts_id}

    def port_cut_through(self, args):
        """Cut-through towards a port: $PORT's $CUT_THROUGH_EN (bf_rt_port
        json; behind it the BF PAL call that sets the traffic manager and the
        parser's EBUF together, off by default). Without "enable" it only
        reads; the answer says what it was before, for the caller's undo."""
        dev = arg_int(args, "dev_port", lo=0)
        e = self._port(dev)
        if e is None:
            raise not_found("port %d is not added", dev)
        d = {text(k): v for k, v in e.data.items()}
        if "$CUT_THROUGH_EN" not in d:
            raise bfrt_failure("port %d: $PORT has no $CUT_THROUGH_EN field in this SDE", dev)
        prev = bool(d["$CUT_THROUGH_EN"])
        if "enable" in args:
            on = arg_bool(args, "enable")
            if on != prev:
                self.call(self.bfrt.port.port.mod, DEV_PORT=dev, CUT_THROUGH_EN=on)
        now = {text(k): v for k, v in self._port(dev).data.items()}
        return {"previous": prev, "enabled": bool(now.get("$CUT_THROUGH_EN", False))}

    def port_stat(self, args):
        dev = arg_int(args, "dev_port", lo=0)
        names = args.get("names")
        if names is not None and (not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names)):
            raise bad_request("argument 'names': expected a non-empty list of counter names, got %s", json.dumps(names))
        t0 = time.time_ns()
        e = self.call(self.bfrt.port.port_stat.get, DEV_PORT=dev, from_hw=True, print_ents=False)
        t1 = time.time_ns()
        if not found(e):
            raise not_found("port %d is not added", dev)
        counters = {}
        for k, v in e.data.items():
            n = as_int(v)
            if n is not None:
                counters[text(k)] = n
        if not counters:
            raise bfrt_failure("port %d: $PORT_STAT read returned no counters", dev)
        if names is not None:
            missing = [n for n in names if n not in counters]
            if missing:
                raise bad_request("port %d: no counter %s in $PORT_STAT", dev, ", ".join(missing))
            counters = {n: counters[n] for n in names}
        return {"time_ns": (t0 + t1) // 2, "counters": counters}

    def port_stat_clear(self, args):
        dev = arg_int(args, "dev_port", lo=0)
        if self._port(dev) is None:
            raise not_found("port %d is not added", dev)
        # A $PORT_STAT mod with no data fields clears every counter of the
        # port (BfRtPortStatTable::tableEntryMod).
        self.call(self.bfrt.port.port_stat.mod, DEV_PORT=dev)
        return {}

    # -- traffic manager --

    def tm_queue(self, args):
        pipe = arg_int(args, "pipe", lo=0, hi=3)
        pg = arg_int(args, "pg_id", lo=0)
        pq = arg_int(args, "pg_queue", lo=0)
        clear = arg_bool(args, "clear_watermark", False)
        q = self.bfrt.tf1.tm.counter.queue
        e = self.call(q.get, pipe=pipe, pg_id=pg, pg_queue=pq, from_hw=True, print_ents=False)
        if not found(e):
            raise not_found("no TM queue pipe %d pg_id %d pg_queue %d", pipe, pg, pq)
        d = {text(k): v for k, v in e.data.items()}
        res = {}
        for f in ("usage_cells", "watermark_cells", "drop_count_packets"):
            n = as_int(d.get(f))
            if n is None:
                raise bfrt_failure("tf1.tm.counter.queue has no %s in %r", f, sorted(d))
            res[f] = n
        if clear:
            self.call(q.mod, pipe=pipe, pg_id=pg, pg_queue=pq, watermark_cells=0)
        return res

    def tm_queue_sched(self, args):
        """Set the scheduling priority of queue qid (ig_tm_md.qid) of an
        egress port; answer the one it had. The queue's key comes from the
        port's tf1.tm.port.cfg (pg_id and egress_qid_queues[qid], as that
        table's description says to key the TM queue tables); the priority
        is tf1.tm.queue.sched_cfg's max_priority, the one the scheduler
        serves a queue with when no guaranteed (min) rate is enabled, as
        is the SDE's default. Read, write and read back are one hold of the
        lock, so no other connection's write comes between the priority
        answered and the one written."""
        dev = arg_int(args, "dev_port", lo=0, hi=511)
        qid = arg_int(args, "qid", lo=0, hi=7)
        # Without a priority the call reads the queue's (what a run
        # journals before it writes one).
        prio = arg_int(args, "priority", lo=0, hi=7) if args.get("priority") is not None else None
        tm = self.bfrt.tf1.tm
        with self._lock:
            return self._tm_queue_sched(tm, dev, qid, prio)

    def _tm_queue_sched(self, tm, dev, qid, prio):
        e = self.call_held(tm.port.cfg.get, dev_port=dev, print_ents=False)
        if not found(e):
            raise not_found("no TM port %d (tf1.tm.port.cfg)", dev)
        d = {text(k): v for k, v in e.data.items()}
        pg, queues = as_int(d.get("pg_id")), d.get("egress_qid_queues")
        if pg is None or not isinstance(queues, (list, tuple)):
            raise bfrt_failure("tf1.tm.port.cfg of port %d has no pg_id or egress_qid_queues in %r", dev, sorted(d))
        if qid >= len(queues):
            raise not_found("port %d has %d logical queues, no queue %d", dev, len(queues), qid)
        pq = as_int(queues[qid])
        if pq is None:
            raise bfrt_failure("tf1.tm.port.cfg of port %d: egress_qid_queues[%d] is %r", dev, qid, queues[qid])
        pipe = dev >> 7
        sc = tm.queue.sched_cfg
        prev = self._sched_priority(sc, pipe, pg, pq)
        if prio is not None and prev != prio:
            # A string choice (LOW, 0..7, HIGH): an unknown one is only
            # printed by bfrt_python, so the write is read back.
            self.call_held(sc.mod, pipe=pipe, pg_id=pg, pg_queue=pq, max_priority=str(prio))
            got = self._sched_priority(sc, pipe, pg, pq)
            if got != prio:
                raise bfrt_failure("port %d queue %d (pipe %d pg_id %d pg_queue %d): max_priority reads %d after writing %d",
                                   dev, qid, pipe, pg, pq, got, prio)
        return {"priority": prev}

    def _sched_priority(self, sc, pipe, pg, pq):
        e = self.call_held(sc.get, pipe=pipe, pg_id=pg, pg_queue=pq, from_hw=True, print_ents=False)
        if not found(e):
            raise not_found("no TM queue pipe %d pg_id %d pg_queue %d (tf1.tm.queue.sched_cfg)", pipe, pg, pq)
        d = {text(k): v for k, v in e.data.items()}
        p = sched_priority(d.get("max_priority"))
        if p is None:
            raise bfrt_failure("tf1.tm.queue.sched_cfg max_priority is %r, want LOW, 0..7 or HIGH", d.get("max_priority"))
        return p

    # -- registers --

    def _register_call(self, name, fn, **kwargs):
        try:
            return self.call(fn, **kwargs)
        except AgentError as e:
            if e.kind == "bad_request" and "REGISTER_INDEX" in e.message:
                raise not_found("%s is not a register", name)
            raise

    def reg_get(self, args):
        name = arg_str(args, "name")
        idx = arg_int(args, "index", lo=0)
        reg = self.resolve(name, "register")
        fn = getattr(reg, "get", None)
        if fn is None:
            raise not_found("%s is not a register", name)
        e = self._register_call(name, fn, REGISTER_INDEX=idx, from_hw=True, print_ents=False)
        if not found(e):
            raise not_found("register %s has no index %d", name, idx)
        return {"values": register_values(name, e.data)}

    def reg_set(self, args):
        name = arg_str(args, "name")
        idx = arg_int(args, "index", lo=0)
        value = arg_int(args, "value", lo=0)
        reg = self.resolve(name, "register")
        fn = getattr(reg, "mod", None)
        if fn is None:
            raise not_found("%s is not a register", name)
        self._register_call(name, fn, REGISTER_INDEX=idx, f1=value)
        return {}

    def reg_range(self, args):
        """count indices of a register from "from" on, each summed over the
        pipes: one get(REGISTER_INDEX=i, from_hw=True) per index (bfrtTable's
        get takes one key), all under one hold of the lock so that no other
        connection's call comes between them."""
        name = arg_str(args, "name")
        first = arg_int(args, "from", lo=0)
        count = arg_int(args, "count", lo=1, hi=MAX_REG_RANGE)
        reg = self.resolve(name, "register")
        fn = getattr(reg, "get", None)
        if fn is None:
            raise not_found("%s is not a register", name)
        out = []
        with self._lock:
            for i in range(first, first + count):
                try:
                    e = fn(REGISTER_INDEX=i, from_hw=True, print_ents=False)
                except TypeError as exc:
                    if is_bfrt_error(exc):
                        raise
                    if "REGISTER_INDEX" in str(exc):
                        raise not_found("%s is not a register", name)
                    raise bad_request("%s", exc)
                if not found(e):
                    raise not_found("register %s has no index %d (reading %d from %d)", name, i, count, first)
                out.append(sum(register_values(name, e.data)))
        return {"values": out}

    # -- tables --

    def _table(self, args):
        name = arg_str(args, "name")
        t = self.resolve(name, "table")
        if getattr(t, "delete", None) is None or getattr(t, "get", None) is None:
            raise not_found("%s is not a match table", name)
        return name, t

    def table_add(self, args):
        name, t = self._table(args)
        action = arg_str(args, "action")
        key = arg_int_map(args, "key")
        data = arg_int_map(args, "data")
        if action:
            check_identifier("action", action)
            fn = getattr(t, "add_with_" + action, None)
            if fn is None:
                raise not_found("table %s has no action %r (add_with_%s)", name, action, action)
        else:
            fn = getattr(t, "add", None)
            if fn is None:
                raise not_found("table %s takes an action", name)
        return self._call_with_entry(fn, key, data)

    def _call_with_entry(self, fn, key, data):
        # An entry's key and data fields are one call's keyword arguments
        # (add_with_<action>, mod_with_<action>): no field may be both.
        both = set(key) & set(data)
        if both:
            raise bad_request("fields %s are both key and data", ", ".join(sorted(both)))
        kwargs = dict(key)
        kwargs.update(data)
        self.call(fn, **kwargs)
        return {}

    def table_mod(self, args):
        # bfrt_python's mod_with_<action>(**key, **data): the entry of
        # that key takes the action and data in place (BF Runtime's
        # entry modify, entry_mod in bfrt_grpc). A key with no entry
        # raises BF_OBJECT_NOT_FOUND: not_found.
        name, t = self._table(args)
        action = arg_str(args, "action")
        check_identifier("action", action)
        key = arg_int_map(args, "key")
        data = arg_int_map(args, "data")
        fn = getattr(t, "mod_with_" + action, None)
        if fn is None:
            raise not_found("table %s has no action %r (mod_with_%s)", name, action, action)
        return self._call_with_entry(fn, key, data)

    def table_del(self, args):
        name, t = self._table(args)
        key = arg_int_map(args, "key")
        self.call(t.delete, **key)
        return {}

    def table_clear(self, args):
        name, t = self._table(args)
        fn = getattr(t, "clear", None)
        if fn is None:
            raise not_found("table %s cannot be cleared", name)
        self.call(fn)
        return {}

    def table_get(self, args):
        name, t = self._table(args)
        # With a key: only the entries whose read-back key has each of its
        # fields at its value. The filter is the agent's, after the read
        # below (bfrt_python's regex get matches patterns on the printed
        # values, not integers): the switch still reads its whole software
        # shadow, the answer holds the entries asked for.
        want = None
        if args.get("key") is not None:
            want = arg_int_map(args, "key")
            if not want:
                raise bad_request("table %s get: key: expected a non-empty object of key fields", name)
        # regex=True without key patterns: every entry, as TableEntry objects.
        ents = self.call(t.get, regex=True, print_ents=False)
        if ents is None or isinstance(ents, int):
            ents = []
        types = None
        if want is not None:
            types = self._key_types(t)
            if types:
                # The key's parameters as an add names them (an action's
                # data fields may lengthen them: param_names).
                names = set()
                for data in {()} | {tuple(e.data) for e in ents}:
                    for k, p in param_names(list(types), data)[0].items():
                        names.update(p + sfx for sfx in _MATCH_PARAMS.get(types[k], ("",)))
                unknown = sorted(set(want) - names)
                if unknown:
                    raise bad_request("table %s has no key field %s (its key: %s)", name,
                                      ", ".join(unknown), ", ".join(sorted(names)))
                want = self._as_kept(t, types, want)
        out = []
        named = {}  # (key fields, data fields) -> their parameters, once per action
        for e in ents:
            key = {}
            fields = (tuple(e.key), tuple(e.data))
            if fields not in named:
                named[fields] = param_names(*fields)
            knames, dnames = named[fields]
            for k, v in e.key.items():
                p = knames[k]
                if isinstance(v, (tuple, list)) and len(v) == 2:
                    if types is None:
                        types = self._key_types(t)
                    a, b = _MATCH_PARAMS.get(types.get(text(k)), ("", "_mask"))
                    for suffix, x in ((a, v[0]), (b, v[1])):
                        n = as_int(x)
                        if n is not None:
                            key[p + suffix] = n
                    continue
                n = as_int(v)
                if n is not None:
                    key[p] = n
            data = {}
            for k, v in e.data.items():
                n = as_int(v)
                if n is not None:
                    data[dnames[k]] = n
            if want is not None and any(key.get(k) != v for k, v in want.items()):
                continue
            out.append({"key": key, "action": action_name(getattr(e, "action", None)), "data": data})
        return {"entries": out}

    def _as_kept(self, t, types, want):
        """want with its ternary and LPM values as the switch keeps them:
        the driver stores a ternary value ANDed with its mask and an LPM
        value with the bits past its prefix cleared (open-p4studio
        bf_rt_p4_table_key_impl.cpp, setValueAndMaskInternal; the LPM mask
        from its prefix length), so an entry added with other bits reads
        back without them."""
        sizes = {}
        try:
            info = self.call(t.info, return_info=True, print_info=False)
            sizes = {text(f["name"]): as_int(f.get("size")) for f in info.get("key_fields", [])}
        except Exception:
            pass
        want = dict(want)
        for k, p in param_names(list(types))[0].items():
            if p not in want:
                continue
            if types[k] == "TERNARY" and p + "_mask" in want:
                want[p] &= want[p + "_mask"]
            elif types[k] == "LPM" and p + "_p_length" in want and sizes.get(k):
                low = max(sizes[k] - want[p + "_p_length"], 0)
                want[p] &= ~((1 << low) - 1)
        return want

    def _key_types(self, t):
        """Key field full name -> match type, from the table's info."""
        try:
            info = self.call(t.info, return_info=True, print_info=False)
            return {text(f["name"]): text(f["type"]) for f in info.get("key_fields", [])}
        except Exception:
            return {}

    # -- packet generator --

    def _app_id(self, args):
        app = arg_int(args, "app_id")
        if not 0 <= app < PKTGEN_APPS:
            raise not_found("pktgen app %d does not exist (TF1 has apps 0..%d)", app, PKTGEN_APPS - 1)
        return app

    def _app_pipe(self, app):
        with self._state:
            return self._pktgen_pipe.get(app, 0)

    def _app_state(self, app, pipe):
        e = self.call(self.bfrt.tf1.pktgen.app_cfg.get, app_id=app, pipe=pipe, from_hw=True, print_ents=False)
        if not found(e):
            raise not_found("pktgen app %d: no configuration in pipe %d", app, pipe)
        d = {text(k): v for k, v in e.data.items()}
        sent = as_int(d.get("pkt_counter")) or 0
        total = ((as_int(d.get("batch_count_cfg")) or 0) + 1) * ((as_int(d.get("packets_per_batch_cfg")) or 0) + 1)
        done = sent >= total
        if self._app_trigger(app) == "timer_periodic":
            # A periodic timer never completes: it runs while enabled.
            return {"enabled": bool(d.get("app_enable", False)), "packets": sent, "done": False}
        return {"enabled": bool(d.get("app_enable", False)) and not done, "packets": sent, "done": done}

    def pktgen_start(self, args):
        app = self._app_id(args)
        port = arg_int(args, "dev_port", lo=0)
        egress = arg_int(args, "egress_port", lo=0)
        pkt_len = arg_int(args, "pkt_len", lo=60, hi=PKT_BUFFER_BYTES)
        timer = arg_int(args, "timer_ns", lo=1, hi=PKTGEN_MAX_TIMER_NS)
        batches = arg_int(args, "batches", lo=1, hi=PKTGEN_MAX_COUNT)
        per_batch = arg_int(args, "packets_per_batch", lo=1, hi=PKTGEN_MAX_COUNT)
        trigger = args.get("trigger") or "timer_one_shot"
        if trigger not in PKTGEN_TRIGGERS:
            raise bad_request("trigger %r (expected one of %s)", trigger, ", ".join(PKTGEN_TRIGGERS))
        # Each gap between batches is timer_ns plus a uniform draw from
        # 0..ibg_jitter_ns (the generator's inter-batch-gap jitter).
        jitter = arg_int(args, "ibg_jitter_ns", default=0, lo=0, hi=PKTGEN_MAX_TIMER_NS)
        frame = None
        if args.get("buffer_hex") is not None:
            frame = arg_hex(args, "buffer_hex")
            if len(frame) > pkt_len - PKTGEN_HEADER:
                raise bad_request("buffer_hex: %d bytes, a %d B packet holds %d after the %d B pktgen header",
                                  len(frame), pkt_len, pkt_len - PKTGEN_HEADER, PKTGEN_HEADER)
        if self._port(egress) is None:
            raise not_found("egress port %d is not added", egress)
        pipe = port >> 7
        st = self._app_state(app, pipe)
        if st["enabled"]:
            raise bfrt_failure("pktgen app %d is running (%d packets sent): stop it first", app, st["packets"])
        pg = self.bfrt.tf1.pktgen
        if frame is None:
            buf = pktgen_frame(pkt_len, app, egress)[PKTGEN_HEADER:]
        else:
            # The caller's frame (a Stardust cell, say), zero-filled.
            buf = frame + bytes(pkt_len - PKTGEN_HEADER - len(frame))
        # Each application has its own slot of the buffer when its packet
        # fits in one; a longer one takes the buffer from its start.
        offset = app * PKT_BUFFER_SLOT if len(buf) <= PKT_BUFFER_SLOT else 0
        self.call(pg.port_cfg.mod, dev_port=port, pktgen_enable=True)
        self.call(pg.pkt_buffer.mod, pipe=pipe, pkt_buffer_offset=offset, pkt_buffer_size=len(buf), buffer=buf)
        # One shot: after timer_ns, batches x packets_per_batch packets, one
        # every timer_ns (ipg inside a batch, ibg between batches); the
        # counters start again from zero. Configured disabled, then enabled,
        # as Intel's tna_pktgen example does.
        # A periodic timer fires every timer_ns until stopped, a batch each
        # time (the LinkGuardian receiver's timer; the artifact's
        # TIMER_PERIODIC app, receiver/setup-ae.py).
        cfg = getattr(pg.app_cfg, "mod_with_trigger_" + trigger)
        self.call(cfg, pipe=pipe, app_id=app,
                  timer_nanosec=timer, app_enable=False, pkt_len=len(buf), pkt_buffer_offset=offset,
                  pipe_local_source_port=port & 0x7F, increment_source_port=False,
                  batch_count_cfg=batches - 1, packets_per_batch_cfg=per_batch - 1,
                  ibg=timer, ibg_jitter=jitter, ipg=timer, ipg_jitter=0,
                  batch_counter=0, pkt_counter=0, trigger_counter=0)
        self.call(cfg, pipe=pipe, app_id=app, app_enable=True)
        with self._state:
            self._pktgen_pipe[app] = pipe
            self._pktgen_trigger[app] = trigger
        return {}

    def _app_trigger(self, app):
        with self._state:
            return self._pktgen_trigger.get(app, "timer_one_shot")

    def pktgen_stop(self, args):
        app = self._app_id(args)
        # Disabled with the action it runs, so its trigger is kept.
        self.call(getattr(self.bfrt.tf1.pktgen.app_cfg, "mod_with_trigger_" + self._app_trigger(app)),
                  pipe=self._app_pipe(app), app_id=app, app_enable=False)
        return {}

    def pktgen_status(self, args):
        app = self._app_id(args)
        return self._app_state(app, self._app_pipe(app))

    # -- fixed-function setup: FEC counters, PFC, mirror, PRE, CPU port --

    def port_fec_stat(self, args):
        """The port manager's FEC counters. bfrt_python has no table for
        them on Tofino 1 ($PORT_STAT is the MAC's RMON set,
        bf_rt_port_tf1.json), so they come from the C API bf_switchd
        links in (bf_port_if.h): bf_port_rs_fec_status_and_counters_get
        for RS, bf_port_fc_fec_status_and_counters_get per virtual lane
        for Firecode, called through ctypes on the bfrt thread."""
        dev = arg_int(args, "dev_port", lo=0, hi=511)
        e = self._port(dev)
        if e is None:
            raise not_found("port %d is not added", dev)
        d = {text(k): v for k, v in e.data.items()}
        fec = text(d.get("$FEC", ""))
        lanes = as_int(d.get("$N_LANES")) or 1
        t0 = time.time_ns()
        if fec in ("BF_FEC_TYP_RS", "BF_FEC_TYP_REED_SOLOMON"):
            r = self.call(self.platform.rs_fec, 0, dev)
        elif fec in ("BF_FEC_TYP_FC", "BF_FEC_TYP_FIRECODE"):
            r = {"hi_ser": False, "fec_align_status": True, "fec_corr_cnt": 0, "fec_uncorr_cnt": 0}
            for vl in range(lanes):
                lock, corr, uncorr = self.call(self.platform.fc_fec, 0, dev, vl)
                r["fec_align_status"] = r["fec_align_status"] and lock
                r["fec_corr_cnt"] += corr
                r["fec_uncorr_cnt"] += uncorr
            for i in range(4):
                r["fec_ser_lane_%d" % i] = 0
        else:
            # No FEC: no decoder, nothing counted, no codeword lock (as
            # the simulated switch and the driver's FECCounters say).
            r = {"hi_ser": False, "fec_align_status": False, "fec_corr_cnt": 0, "fec_uncorr_cnt": 0}
            for i in range(4):
                r["fec_ser_lane_%d" % i] = 0
        t1 = time.time_ns()
        out = {"time_ns": (t0 + t1) // 2}
        for k in ("hi_ser", "fec_align_status"):
            out[k] = bool(r[k])
        for k in ("fec_corr_cnt", "fec_uncorr_cnt", "fec_ser_lane_0", "fec_ser_lane_1", "fec_ser_lane_2", "fec_ser_lane_3"):
            out[k] = int(r[k])
        return out

    def port_pfc(self, args):
        """$PORT's $RX_PFC_EN_MAP (classes whose PFC frames the MAC honours)
        and $TX_PFC_EN_MAP (classes it may send), read, and written when
        both maps are given; the previous maps answered."""
        dev = arg_int(args, "dev_port", lo=0, hi=511)
        has_rx, has_tx = args.get("rx_map") is not None, args.get("tx_map") is not None
        if has_rx != has_tx:
            raise bad_request("port.pfc: give both rx_map and tx_map, or neither to read")
        with self._lock:
            prev = self._pfc_held(dev)
            now = prev
            if has_rx:
                now = {"rx_map": arg_int(args, "rx_map", lo=0, hi=0xFF), "tx_map": arg_int(args, "tx_map", lo=0, hi=0xFF)}
                if now != prev:
                    self.call_held(self.bfrt.port.port.mod, DEV_PORT=dev, RX_PFC_EN_MAP=now["rx_map"], TX_PFC_EN_MAP=now["tx_map"])
                    got = self._pfc_held(dev)
                    if got != now:
                        raise bfrt_failure("port %d: PFC maps read %r after writing %r", dev, got, now)
        return {"previous": prev, "rx_map": now["rx_map"], "tx_map": now["tx_map"]}

    def _pfc_held(self, dev):
        e = self.call_held(self.bfrt.port.port.get, DEV_PORT=dev, print_ents=False)
        if not found(e):
            raise not_found("port %d is not added", dev)
        d = {text(k): v for k, v in e.data.items()}
        return {"rx_map": as_int(d.get("$RX_PFC_EN_MAP")) or 0, "tx_map": as_int(d.get("$TX_PFC_EN_MAP")) or 0}

    def tm_queue_pfc_cos(self, args):
        """The PFC class an egress queue honours (tf1.tm.queue.cfg pfc_cos,
        "by default, all queues use mapping CoS zero", bf_rt_tm_tf1.json),
        keyed as tm.queue.sched; written when cos is given; the previous
        one answered."""
        dev = arg_int(args, "dev_port", lo=0, hi=511)
        qid = arg_int(args, "qid", lo=0, hi=7)
        cos = arg_int(args, "cos", lo=0, hi=7) if args.get("cos") is not None else None
        tm = self.bfrt.tf1.tm
        with self._lock:
            pipe, pg, pq = self._queue_key_held(tm, dev, qid)
            prev = self._pfc_cos_held(tm, pipe, pg, pq)
            if cos is not None and cos != prev:
                self.call_held(tm.queue.cfg.mod, pipe=pipe, pg_id=pg, pg_queue=pq, pfc_cos=cos)
                got = self._pfc_cos_held(tm, pipe, pg, pq)
                if got != cos:
                    raise bfrt_failure("port %d queue %d: pfc_cos reads %d after writing %d", dev, qid, got, cos)
        return {"cos": prev}

    def _queue_key_held(self, tm, dev, qid):
        e = self.call_held(tm.port.cfg.get, dev_port=dev, print_ents=False)
        if not found(e):
            raise not_found("no TM port %d (tf1.tm.port.cfg)", dev)
        d = {text(k): v for k, v in e.data.items()}
        pg, queues = as_int(d.get("pg_id")), d.get("egress_qid_queues")
        if pg is None or not isinstance(queues, (list, tuple)) or qid >= len(queues) or as_int(queues[qid]) is None:
            raise not_found("port %d has no queue %d in tf1.tm.port.cfg", dev, qid)
        return dev >> 7, pg, as_int(queues[qid])

    def _pfc_cos_held(self, tm, pipe, pg, pq):
        e = self.call_held(tm.queue.cfg.get, pipe=pipe, pg_id=pg, pg_queue=pq, print_ents=False)
        if not found(e):
            raise not_found("no TM queue pipe %d pg_id %d pg_queue %d (tf1.tm.queue.cfg)", pipe, pg, pq)
        v = as_int({text(k): v for k, v in e.data.items()}.get("pfc_cos"))
        if v is None:
            raise bfrt_failure("tf1.tm.queue.cfg has no pfc_cos")
        return v

    def mirror_add(self, args):
        """bfrt.mirror.cfg.add_with_normal, as the LinkGuardian artifact
        calls it (sender/setup-ae.py): one session to one port's queue,
        enabled, truncated to max_pkt_len."""
        sid = arg_int(args, "sid", lo=1, hi=MAX_MIRROR_SID)
        direction = arg_str(args, "direction")
        if direction not in MIRROR_DIRECTIONS:
            raise bad_request("direction %r (expected one of %s)", direction, ", ".join(MIRROR_DIRECTIONS))
        port = arg_int(args, "ucast_egress_port", lo=0, hi=511)
        q = arg_int(args, "egress_port_queue", lo=0, hi=31)
        length = arg_int(args, "max_pkt_len", lo=1, hi=MAX_PKT_LEN)
        self.call(self.bfrt.mirror.cfg.add_with_normal, sid=sid, direction=direction, session_enable=True,
                  ucast_egress_port=port, ucast_egress_port_valid=True, egress_port_queue=q, max_pkt_len=length)
        return {}

    def mirror_get(self, args):
        sid = arg_int(args, "sid", lo=1, hi=MAX_MIRROR_SID)
        e = self.call(self.bfrt.mirror.cfg.get, sid=sid, print_ents=False)
        if not found(e):
            raise not_found("mirror session %d is not configured", sid)
        d = {text(k).lstrip("$"): v for k, v in e.data.items()}
        return {"sid": sid, "direction": text(d.get("direction", "")), "session_enable": bool(d.get("session_enable", False)),
                "ucast_egress_port": as_int(d.get("ucast_egress_port")) or 0,
                "egress_port_queue": as_int(d.get("egress_port_queue")) or 0,
                "max_pkt_len": as_int(d.get("max_pkt_len")) or 0}

    def mirror_del(self, args):
        sid = arg_int(args, "sid", lo=1, hi=MAX_MIRROR_SID)
        self.call(self.bfrt.mirror.cfg.delete, sid=sid)
        return {}

    def pre_node_add(self, args):
        """bfrt.pre.node.add(MULTICAST_NODE_ID, MULTICAST_RID,
        MULTICAST_LAG_ID=[], DEV_PORT=[...]) (receiver/setup-ae.py)."""
        node = arg_int(args, "node_id", lo=0, hi=(1 << 32) - 1)
        rid = arg_int(args, "rid", lo=0, hi=0xFFFF)
        ports = arg_int_list(args, "dev_ports", lo=0, hi=511)
        self.call(self.bfrt.pre.node.add, MULTICAST_NODE_ID=node, MULTICAST_RID=rid, MULTICAST_LAG_ID=[], DEV_PORT=ports)
        return {}

    def pre_node_get(self, args):
        node = arg_int(args, "node_id", lo=0, hi=(1 << 32) - 1)
        e = self.call(self.bfrt.pre.node.get, MULTICAST_NODE_ID=node, print_ents=False)
        if not found(e):
            raise not_found("multicast node %d does not exist", node)
        d = {text(k): v for k, v in e.data.items()}
        return {"node_id": node, "rid": as_int(d.get("$MULTICAST_RID")) or 0,
                "dev_ports": [as_int(p) for p in d.get("$DEV_PORT") or []]}

    def pre_node_del(self, args):
        node = arg_int(args, "node_id", lo=0, hi=(1 << 32) - 1)
        self.call(self.bfrt.pre.node.delete, MULTICAST_NODE_ID=node)
        return {}

    def pre_mgid_add(self, args):
        """bfrt.pre.mgid.add(MGID, MULTICAST_NODE_ID=[...],
        MULTICAST_NODE_L1_XID_VALID=[False...], MULTICAST_NODE_L1_XID=[0...])
        (sender/setup-ae.py, set_number_of_retx_copies)."""
        mgid = arg_int(args, "mgid", lo=1, hi=MAX_MGID)
        nodes = arg_int_list(args, "node_ids", lo=0, hi=(1 << 32) - 1)
        self.call(self.bfrt.pre.mgid.add, MGID=mgid, MULTICAST_NODE_ID=nodes,
                  MULTICAST_NODE_L1_XID_VALID=[False] * len(nodes), MULTICAST_NODE_L1_XID=[0] * len(nodes))
        return {}

    def pre_mgid_get(self, args):
        mgid = arg_int(args, "mgid", lo=1, hi=MAX_MGID)
        e = self.call(self.bfrt.pre.mgid.get, MGID=mgid, print_ents=False)
        if not found(e):
            raise not_found("multicast group %d does not exist", mgid)
        d = {text(k): v for k, v in e.data.items()}
        return {"mgid": mgid, "node_ids": [as_int(n) for n in d.get("$MULTICAST_NODE_ID") or []]}

    def pre_mgid_del(self, args):
        mgid = arg_int(args, "mgid", lo=1, hi=MAX_MGID)
        self.call(self.bfrt.pre.mgid.delete, MGID=mgid)
        return {}

    def packet_out(self, args):
        """A frame into the ingress pipeline from the CPU port: sent on the
        CPU port's netdev ($TESTBED_CPU_IFACE), as the LinkGuardian
        artifact sends its initial dummy and courier packets (scapy's
        sendp on the CPU PCIe interface, common/linkradar_scapy.py)."""
        frame = arg_hex(args, "frame_hex")
        if not MIN_FRAME <= len(frame) <= MAX_FRAME:
            raise bad_request("frame_hex: a %d B frame (expected %d..%d without FCS)", len(frame), MIN_FRAME, MAX_FRAME)
        iface = os.environ.get("TESTBED_CPU_IFACE") or DEFAULT_CPU_IFACE
        try:
            self.platform.send(iface, frame)
        except OSError as e:
            raise bfrt_failure("packet out on %s: %s (the SDE's kernel packet driver's interface; set TESTBED_CPU_IFACE)", iface, e)
        return {}


def sched_priority(v):
    """A max_priority or min_priority as read: BF Runtime spells
    BF_TM_SCH_PRIO_0..7 "0".."7", with "LOW" and "HIGH" for 0 and 7
    (bf_rt_tm_table_helper_sched.cpp); None if it is none of them."""
    if isinstance(v, bytes):
        v = v.decode("ascii", "replace")
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v if 0 <= v <= 7 else None
    if not isinstance(v, str):
        return None
    v = v.strip().upper()
    if v in ("LOW", "HIGH"):
        return 0 if v == "LOW" else 7
    if len(v) == 1 and v in "01234567":
        return int(v)
    return None


def register_values(name, data):
    """One integer per pipe from a register read's data: the field
    "<Control>.<register>.f1" (a list, one value per pipe)."""
    d = {text(k): v for k, v in data.items()}
    v = d.get(name + ".f1")
    if v is None:
        lists = [k for k, x in d.items() if isinstance(x, (list, tuple))]
        if len(lists) != 1:
            raise bad_request("register %s has fields %s: reg.get reads registers of one field (f1)", name, ", ".join(sorted(d)))
        v = d[lists[0]]
    if not isinstance(v, (list, tuple)):
        v = [v]
    out = []
    for x in v:
        n = as_int(x)
        if n is None:
            raise bfrt_failure("register %s: value %r is not a number", name, x)
        out.append(n)
    if not out:
        raise bfrt_failure("register %s: no values", name)
    return out


def pktgen_frame(length, app_id, egress_port):
    """The frame an application sends (length bytes, FCS not counted)."""
    dst = b"\xff" * 6
    src = bytes([0x02, 0x74, 0x62, app_id & 0xFF, (egress_port >> 8) & 0xFF, egress_port & 0xFF])
    eth = dst + src + bytes([PKTGEN_ETHERTYPE >> 8, PKTGEN_ETHERTYPE & 0xFF])
    return eth + bytes(length - len(eth))


def error_response(rid, kind, message):
    return {"id": rid, "ok": False, "error": {"kind": kind, "message": message}}


def encode(resp):
    return (json.dumps(resp, separators=(",", ":"), sort_keys=True) + "\n").encode("utf-8")


# ---- what bfrt_python does not reach ----


class SdePlatform:
    """The SDE's C API inside bf_switchd (ctypes on the process's own
    symbols: bfrt_python runs embedded in bf_switchd, which links
    libdriver) and the CPU port's netdev."""

    def _fn(self, name, *argtypes):
        try:
            fn = getattr(ctypes.CDLL(None), name)
        except (OSError, AttributeError) as e:
            raise bfrt_failure("%s is not in this process (%s): the agent must run inside bf_switchd's bfrt_python", name, e)
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
        return fn

    def rs_fec(self, dev_id, dev_port):
        """bf_port_rs_fec_status_and_counters_get (bf_port_if.h)."""
        b = ctypes.POINTER(ctypes.c_bool)
        u = ctypes.POINTER(ctypes.c_uint32)
        fn = self._fn("bf_port_rs_fec_status_and_counters_get", ctypes.c_int, ctypes.c_int, b, b, *([u] * 10))
        hi, align = ctypes.c_bool(), ctypes.c_bool()
        n = [ctypes.c_uint32() for _ in range(10)]
        sts = fn(dev_id, dev_port, ctypes.byref(hi), ctypes.byref(align), *[ctypes.byref(x) for x in n])
        if sts != 0:
            raise bfrt_failure("bf_port_rs_fec_status_and_counters_get(%d, %d): status %d", dev_id, dev_port, sts)
        out = {"hi_ser": hi.value, "fec_align_status": align.value, "fec_corr_cnt": n[0].value, "fec_uncorr_cnt": n[1].value}
        for i in range(4):
            out["fec_ser_lane_%d" % i] = n[2 + i].value
        return out

    def fc_fec(self, dev_id, dev_port, vl):
        """bf_port_fc_fec_status_and_counters_get (bf_port_if.h): block
        lock, corrected and uncorrected blocks of virtual lane vl."""
        u = ctypes.POINTER(ctypes.c_uint32)
        fn = self._fn("bf_port_fc_fec_status_and_counters_get", ctypes.c_int, ctypes.c_int, ctypes.c_uint32,
                      ctypes.POINTER(ctypes.c_bool), u, u)
        lock, corr, uncorr = ctypes.c_bool(), ctypes.c_uint32(), ctypes.c_uint32()
        sts = fn(dev_id, dev_port, vl, ctypes.byref(lock), ctypes.byref(corr), ctypes.byref(uncorr))
        if sts != 0:
            raise bfrt_failure("bf_port_fc_fec_status_and_counters_get(%d, %d, %d): status %d", dev_id, dev_port, vl, sts)
        return lock.value, corr.value, uncorr.value

    def send(self, iface, frame):
        """One frame on a netdev (AF_PACKET; bf_switchd runs as root)."""
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        try:
            s.bind((iface, 0))
            s.send(frame)
        finally:
            s.close()


class BfrtThread:
    """Every bfrt call on one thread: the interpreter's own, which runs
    serve() while the connections' threads queue their calls to it (the
    SDE's bfrt_python keeps one session and one current target, made on
    that thread; calls from other threads are not known to be safe).

    serve() sleeps in the queue until a call or stop() arrives: stop() puts
    a sentinel on the queue, so the thread ends at once rather than on its
    next timed wake-up, and never wakes while there is nothing to do."""

    _STOP = object()

    def __init__(self):
        self._q = queue.Queue()
        self._owner = None
        self._lock = threading.Lock()
        self._stopped = False

    def run(self, fn, args, kwargs):
        if self._owner is None or threading.current_thread() is self._owner:
            return fn(*args, **kwargs)
        box = {}
        done = threading.Event()
        with self._lock:
            if self._stopped:
                raise AgentError("internal", "the agent is stopping")
            self._q.put((fn, args, kwargs, box, done))
        done.wait()
        if "error" in box:
            raise box["error"]
        return box["result"]

    def stop(self):
        """End serve(): the calls queued before are made, those queued
        after fail (kind internal, the agent is stopping)."""
        with self._lock:
            if not self._stopped:
                self._stopped = True
                self._q.put(self._STOP)

    def serve(self):
        """Make the queued calls on this thread until stop()."""
        self._owner = threading.current_thread()
        while True:
            item = self._q.get()
            if item is self._STOP:
                return
            fn, args, kwargs, box, done = item
            try:
                box["result"] = fn(*args, **kwargs)
            except BaseException as e:  # handed to the caller
                box["error"] = e
            done.set()


# ---- the server ----


def read_token(path):
    """The tokens in the file at path, one per line (each driver adds its
    own); None when the file cannot be read, holds none, or group or
    others may read it."""
    try:
        st = os.stat(path)
        if st.st_mode & 0o077:
            _log("token file %s: group or others may read it: refusing every connection" % path)
            return None
        with open(path) as f:
            toks = [t.strip() for t in f.read(65536).splitlines() if t.strip()]
    except OSError as e:
        _log("token file %s: %s" % (path, e))
        return None
    return toks or None


def token_files(env_file, agent_file):
    """Where the run's tokens may be: the file the driver named in
    bf_switchd's environment ($TESTBED_AGENT_TOKEN_FILE, an absolute path in
    the SSH user's home), the file beside the agent (the driver writes both
    into one directory: this covers a daemon started by someone else,
    without that variable, or as root, whose ~ is elsewhere), and
    ~/.testbed/agent_token of the daemon's user."""
    out = []
    for f in (env_file,
              os.path.join(os.path.dirname(os.path.abspath(agent_file)), "agent_token") if agent_file else None,
              os.path.join(os.path.expanduser("~"), ".testbed", "agent_token")):
        if f and f not in out:
            out.append(f)
    return out


def read_tokens(paths):
    """Every token of the files at paths that exist (each as read_token
    reads it); None when there is none."""
    toks = []
    for p in paths:
        if os.path.exists(p):
            toks.extend(read_token(p) or [])
    if not toks:
        _log("no token in %s: refusing every connection" % ", ".join(paths))
    return toks or None


def check_auth(token, line):
    """None when line is the auth request with the token, else the error
    response to send before closing."""
    try:
        req = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        req = None
    rid = req.get("id", 0) if isinstance(req, dict) else 0
    if isinstance(rid, bool) or not isinstance(rid, int):
        rid = 0
    if not isinstance(req, dict) or req.get("op") != "auth":
        return error_response(rid, "unauthorized", "the first request must be auth with the run's token")
    args = req.get("args")
    got = args.get("token") if isinstance(args, dict) else None
    want = token() if token is not None else None
    if isinstance(want, str):
        want = [want]
    ok = False
    if want and isinstance(got, str):
        for w in want:  # every candidate compared, in constant time each
            ok = hmac.compare_digest(got.encode("utf-8"), w.encode("utf-8")) or ok
    if not ok:
        return error_response(rid, "unauthorized", "wrong token")
    return None


class _Handler(socketserver.StreamRequestHandler):
    disable_nagle_algorithm = True

    def setup(self):
        self.request.settimeout(self.server.idle_timeout)
        socketserver.StreamRequestHandler.setup(self)

    def handle(self):
        srv = self.server
        if not srv.slots.acquire(blocking=False):
            self._send(error_response(0, "busy", "%d connections already open" % srv.max_connections))
            return
        try:
            self._serve()
        finally:
            srv.slots.release()

    def _serve(self):
        agent = self.server.agent
        authed = False
        while True:
            try:
                line = self.rfile.readline(MAX_LINE + 1)
            except OSError:
                return
            if not line:
                return
            if len(line) > MAX_LINE and not line.endswith(b"\n"):
                self._send(error_response(0, "bad_request", "request longer than %d bytes" % MAX_LINE))
                return
            if not line.strip():
                continue
            if not authed:
                refused = check_auth(self.server.token, line)
                if refused is not None:
                    self._send(refused)
                    return
                authed = True
                if not self._send({"id": json.loads(line.decode("utf-8")).get("id", 0), "ok": True, "result": {}}):
                    return
                continue
            if not self._send(agent.respond(line)):
                return

    def _send(self, resp):
        try:
            self.wfile.write(encode(resp))
            return True
        except OSError:
            return False


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    """The agent's TCP server: one thread per connection."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, agent, host="127.0.0.1", port=0, token=None,
                 idle_timeout=None, max_connections=None):
        # (Defaults are resolved here, not in the signature: under
        # bfrt_python the class body cannot see the module's names.)
        self.agent = agent
        self.token = token  # a function returning the run's token
        self.idle_timeout = idle_timeout or IDLE_TIMEOUT_S
        self.max_connections = max_connections or MAX_CONNECTIONS
        self.slots = threading.BoundedSemaphore(self.max_connections)
        socketserver.TCPServer.__init__(self, (host, port), _Handler)

    @property
    def port(self):
        return self.server_address[1]


def serve(bfrt, host="127.0.0.1", port=0, program=None, token=None, platform=None, runner=None, **kw):
    """A bound server for bfrt (not yet serving: call serve_forever).
    token is a function returning the token every connection must present
    first (None refuses every connection)."""
    return Server(Agent(bfrt, program, platform, runner), host, port, token, **kw)


def main(bfrt):
    """Serve on 127.0.0.1:$TESTBED_AGENT_PORT (default 9091) until the
    process ends."""
    port = int(os.environ.get("TESTBED_AGENT_PORT") or DEFAULT_PORT)
    files = token_files(os.environ.get("TESTBED_AGENT_TOKEN_FILE"), globals().get("__file__"))
    # A stand-in bfrt (fake_bfrt.py) brings its own platform.
    runner = BfrtThread()
    srv = serve(bfrt, "127.0.0.1", port, token=lambda: read_tokens(files),
                platform=getattr(bfrt, "testbed_platform", None), runner=runner)
    _log("%s %s, program %r, listening on 127.0.0.1:%d, tokens from %s" % (AGENT, VERSION, srv.agent.program(), srv.port, ", ".join(files)))
    # The connections are served on a thread of their own; this thread,
    # bfrt_python's, makes every bfrt call they queue until the accepting
    # thread ends.

    def accept():
        try:
            srv.serve_forever()
        finally:
            runner.stop()

    threading.Thread(target=accept, name="testbed-agent-accept", daemon=True).start()
    try:
        runner.serve()
    finally:
        srv.shutdown()
        srv.server_close()


# bfrt_python (bfrtcli.start_bfrt) runs a -b script as exec(source) inside
# a function: the script's top-level names land in that function's locals,
# while the functions and classes above look names up in bfrtcli's module
# globals, where they are not. Run this same code again in one namespace of
# its own, with bfrt, and start there. Imported (tests), there is no bfrt
# and nothing starts.
# The agent's own path (its token may be beside it): IPython's exec_files
# (bfrtcli.start_bfrt, SDE 9.x) sets __file__; an older bfrtcli's
# exec(open(udf).read()) leaves the path in start_bfrt's local udf.
_bfrt = locals().get("bfrt", globals().get("bfrt"))
if _bfrt is not None:
    if globals() is not locals():
        exec(sys._getframe(0).f_code, {"__name__": "testbed_agent", "bfrt": _bfrt,
                                       "__file__": locals().get("__file__") or locals().get("udf") or globals().get("__file__")})
    else:
        main(_bfrt)
elif __name__ == "__main__":
    sys.exit("testbed_agent.py runs inside the SDE's bfrt_python: $SDE/run_bfshell.sh -b testbed_agent.py")
