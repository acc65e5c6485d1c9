"""A stand-in for bfrt_python's ``bfrt`` object, for the agent's tests.

It offers the subset of the BF Runtime Python command tree the agent uses,
with bfrt_python's shapes and manners (bfrtcli.py, bfrtTable.py of the SDE):

- nodes are attributes (bfrt.port.port, bfrt.tf1.tm.counter.queue,
  bfrt.sender.pipe.SwitchEgress.reg_seq_no); a missing one is an
  AttributeError;
- a table's methods take keyword parameters named after its fields
  (DEV_PORT, REGISTER_INDEX, egress_port, egress_port_7_0_, ...) plus the
  target (pipe, gress_dir, prsr_id); an unknown keyword is a TypeError;
- get(..., print_ents=False) returns an entry with .key, .data (bytes
  field names) and .action, or -1 when there is no such entry;
  get(regex=True) returns every entry; register data is a list, one value
  per pipe;
- a failing BF Runtime call raises BfRtTableError(str_rep, table, sts) with
  bfrt_python's message and the bf_status_t (4 already exists, 6 not found,
  3 invalid argument); a value wider than its field raises with sts -1;
- an unknown string choice (SPEED, FEC, ...) is printed and the call
  returns as if it had worked, as bfrt_python does.

bfrt_python is not thread-safe: a call made while another is running raises
RuntimeError here, so a test sees an agent that does not serialize.
"""

import threading
import time

BF_INVALID_ARG = 3
BF_ALREADY_EXISTS = 4
BF_OBJECT_NOT_FOUND = 6
_ERR_STR = {BF_INVALID_ARG: "Invalid arguments", BF_ALREADY_EXISTS: "Already exists", BF_OBJECT_NOT_FOUND: "Object not found"}

PIPES = 4
TARGET = ("pipe", "gress_dir", "prsr_id")
GET_OPTS = ("regex", "return_ents", "print_ents", "table", "from_hw", "handle")

# $PORT_STAT fields (a subset of the RMON counters bf_rt_port_tf1.json declares).
PORT_STAT_FIELDS = (
    "$FramesReceivedOK", "$FramesReceivedAll", "$FramesReceivedwithFCSError", "$FrameswithanyError",
    "$OctetsReceivedinGoodFrames", "$OctetsReceived", "$FramesReceivedPriPause",
    "$FramesTransmittedOK", "$FramesTransmittedAll", "$OctetsTransmittedTotal",
    "$FramesTransmittedPriPause", "$PriorityPauseFrames",
)
SPEED_CHOICES = ("BF_SPEED_NONE", "BF_SPEED_1G", "BF_SPEED_10G", "BF_SPEED_25G", "BF_SPEED_40G",
                 "BF_SPEED_50G", "BF_SPEED_100G", "BF_SPEED_200G", "BF_SPEED_400G")
FEC_CHOICES = ("BF_FEC_TYP_NONE", "BF_FEC_TYP_FIRECODE", "BF_FEC_TYP_REED_SOLOMON",
               "BF_FEC_TYP_FC", "BF_FEC_TYP_RS")
AN_CHOICES = ("PM_AN_DEFAULT", "PM_AN_FORCE_ENABLE", "PM_AN_FORCE_DISABLE")


class BfRtTableError(Exception):
    """bfrtTable.BfRtTableError."""

    def __init__(self, str_rep, table_obj, sts, *args, **kwargs):
        self.sts = sts
        self.table = table_obj
        self.str_rep = str_rep
        Exception.__init__(self, str_rep, *args, **kwargs)


class TableEntry:
    """bfrtTableEntry.TableEntry: key and data by full field name (bytes),
    the action's full name."""

    def __init__(self, table, key, data, action=None):
        self._table = table
        self.key = key
        self.data = data
        if isinstance(action, bytes):
            action = action.decode("ascii")
        self.action = action


class Node:
    """A BFNode: children are attributes."""

    def __init__(self, name, parent=None):
        self._name = name
        if parent is not None:
            setattr(parent, name, self)


def _unexpected(method, kwargs, allowed):
    for k in kwargs:
        if k not in allowed:
            raise TypeError("%s() got an unexpected keyword argument '%s'" % (method, k))


class _Table:
    def __init__(self, root, parent, name, full_name):
        self._root = root
        self._name = name
        self.name = full_name
        setattr(parent, name, self)

    def _fail(self, what, sts):
        raise BfRtTableError("Error: %s failed on table %s. [%s]" % (what, self.name, _ERR_STR.get(sts, sts)), self, sts)

    def _begin(self, method, kwargs, allowed):
        _unexpected(method, kwargs, allowed)
        self._root._enter(self.name, method, kwargs)

    def _end(self):
        self._root._leave()

    def _check_width(self, field, value, bits):
        if value is None:
            return 0
        value = int(value)
        if value < 0 or value >> bits:
            raise BfRtTableError("Error: input %s (parsed: %d) for field %s is greater than %d bits." % (value, value, field, bits), self, -1)
        return value


def _table_method(table, method, allowed, body):
    def fn(**kwargs):
        table._begin(method, kwargs, allowed)
        try:
            return body(**kwargs)
        finally:
            table._end()
    fn.__name__ = method
    return fn


# ---- ports ----


class PortTable(_Table):
    """bfrt.port.port ($PORT)."""

    DATA = ("SPEED", "FEC", "N_LANES", "PORT_ENABLE", "AUTO_NEGOTIATION", "LOOPBACK_MODE", "TX_MTU", "RX_MTU", "CUT_THROUGH_EN",
            "TX_PFC_EN_MAP", "RX_PFC_EN_MAP")

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "port", "port.port")
        key = ("DEV_PORT",)
        self.add = _table_method(self, "add", key + self.DATA + TARGET, self._add)
        self.mod = _table_method(self, "mod", key + self.DATA + TARGET, self._mod)
        self.delete = _table_method(self, "delete", key + TARGET + ("handle",), self._delete)
        self.get = _table_method(self, "get", key + GET_OPTS + TARGET, self._get)
        self.clear = _table_method(self, "clear", TARGET + ("batch",), self._clear)

    def _choice(self, field, value, choices):
        if value is not None and value not in choices:
            print("Error: Invalid choice %r for field %s" % (value, field))
            return False
        return True

    def _add(self, DEV_PORT=None, SPEED=None, FEC=None, AUTO_NEGOTIATION=None, PORT_ENABLE=None, **other):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        if not (self._choice("$SPEED", SPEED, SPEED_CHOICES) and self._choice("$FEC", FEC, FEC_CHOICES)
                and self._choice("$AUTO_NEGOTIATION", AUTO_NEGOTIATION, AN_CHOICES)):
            return None
        if SPEED is None or FEC is None:
            self._fail("table_entry_add", BF_INVALID_ARG)
        if dev >> 7 >= PIPES or dev & 0x7F >= 72:
            self._fail("table_entry_add", BF_INVALID_ARG)
        ports = self._root.ports
        if dev in ports:
            self._fail("table_entry_add", BF_ALREADY_EXISTS)
        # $CUT_THROUGH_EN: off unless asked (bf_tm_port_cut_through_enable's
        # documented default).
        ports[dev] = {"$SPEED": SPEED, "$FEC": FEC, "$PORT_ENABLE": bool(PORT_ENABLE),
                      "$AUTO_NEGOTIATION": AUTO_NEGOTIATION or "PM_AN_DEFAULT",
                      "$CUT_THROUGH_EN": bool(other.get("CUT_THROUGH_EN", False)),
                      "$N_LANES": {"BF_SPEED_40G": 4, "BF_SPEED_50G": 2, "BF_SPEED_100G": 4}.get(SPEED, 1),
                      "$TX_PFC_EN_MAP": 0, "$RX_PFC_EN_MAP": 0}
        return None

    def _mod(self, DEV_PORT=None, PORT_ENABLE=None, CUT_THROUGH_EN=None, TX_PFC_EN_MAP=None, RX_PFC_EN_MAP=None, **other):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        if dev not in self._root.ports:
            self._fail("table_entry_mod", BF_OBJECT_NOT_FOUND)
        if PORT_ENABLE is not None:
            self._root.ports[dev]["$PORT_ENABLE"] = bool(PORT_ENABLE)
        if CUT_THROUGH_EN is not None:
            self._root.ports[dev]["$CUT_THROUGH_EN"] = bool(CUT_THROUGH_EN)
        for f, v in (("$TX_PFC_EN_MAP", TX_PFC_EN_MAP), ("$RX_PFC_EN_MAP", RX_PFC_EN_MAP)):
            if v is not None:
                self._root.ports[dev][f] = self._check_width(f, v, 32)

    def _delete(self, DEV_PORT=None, **target):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        if dev not in self._root.ports:
            self._fail("table_entry_delete", BF_OBJECT_NOT_FOUND)
        del self._root.ports[dev]

    def _get(self, DEV_PORT=None, print_ents=True, **opts):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        p = self._root.ports.get(dev)
        if p is None:
            if print_ents:
                print("Error: table_entry_get failed on table %s. [Object not found]" % self.name)
            return -1
        data = {k.encode(): v for k, v in p.items()}
        data[b"$PORT_UP"] = p["$PORT_ENABLE"] and self._root.link.get(dev, True)
        # Read-only 1588 fields of $PORT (bf_rt_port_tf1.json ids 30-32): the
        # MAC's tx timestamp of the last frame that asked for one.
        ts = self._root.tx_tstamp.get(dev)
        data[b"$TIMESTAMP_1588_VALID"] = ts is not None
        data[b"$TIMESTAMP_1588_VALUE"] = ts[0] if ts else 0
        data[b"$TIMESTAMP_1588_ID"] = ts[1] if ts else 0
        return TableEntry(self, {b"$DEV_PORT": dev}, data)

    def _clear(self, **target):
        self._root.ports.clear()


class PortStatTable(_Table):
    """bfrt.port.port_stat ($PORT_STAT)."""

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "port_stat", "port.port_stat")
        fields = tuple(f[1:] for f in PORT_STAT_FIELDS)
        self.get = _table_method(self, "get", ("DEV_PORT",) + GET_OPTS + TARGET, self._get)
        self.mod = _table_method(self, "mod", ("DEV_PORT",) + fields + TARGET, self._mod)
        self.clear = _table_method(self, "clear", TARGET + ("batch",), self._clear)

    def _get(self, DEV_PORT=None, print_ents=True, **opts):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        if dev not in self._root.ports:
            if print_ents:
                print("Error: table_entry_get failed on table %s. [Object not found]" % self.name)
            return -1
        c = self._root.counters.get(dev, {})
        return TableEntry(self, {b"$DEV_PORT": dev}, {f.encode(): c.get(f, 0) for f in PORT_STAT_FIELDS})

    def _mod(self, DEV_PORT=None, pipe=None, gress_dir=None, prsr_id=None, **fields):
        dev = self._check_width("$DEV_PORT", DEV_PORT, 32)
        if dev not in self._root.ports:
            self._fail("table_entry_mod", BF_OBJECT_NOT_FOUND)
        given = {"$" + k: v for k, v in fields.items() if v is not None}
        if any(v != 0 for v in given.values()):
            self._fail("table_entry_mod", BF_INVALID_ARG)  # counters can only be cleared
        c = self._root.counters.setdefault(dev, {})
        for f in given or PORT_STAT_FIELDS:
            c[f] = 0

    def _clear(self, **target):
        for c in self._root.counters.values():
            c.clear()


# ---- traffic manager ----


class _TmQueueTable(_Table):
    """A TM table of queues: per pipe, keyed by pg_id and pg_queue, with
    the fields FIELDS. A subclass gives where its entries live
    (_entries), a new entry's values (_defaults), how a read spells a
    value (_read) and its own _mod."""

    def __init__(self, root, parent, name, full):
        _Table.__init__(self, root, parent, name, full)
        key = ("pg_id", "pg_queue")
        self.get = _table_method(self, "get", key + GET_OPTS + TARGET, self._get)
        self.mod = _table_method(self, "mod", key + self.FIELDS + TARGET, self._mod)

    def _read(self, field, v):
        return v

    def _queue(self, what, pipe, pg_id, pg_queue):
        if pipe is None or not 0 <= pipe < PIPES:
            self._fail(what, BF_INVALID_ARG)  # the TM tables need one pipe
        pg = self._check_width("pg_id", pg_id, 8)
        q = self._check_width("pg_queue", pg_queue, 8)
        if pg >= 18 or q >= 32:
            return None
        return self._entries().setdefault((pipe, pg, q), self._defaults())

    def _get(self, pg_id=None, pg_queue=None, pipe=None, print_ents=True, **opts):
        q = self._queue("table_entry_get", pipe, pg_id, pg_queue)
        if q is None:
            if print_ents:
                print("Error: table_entry_get failed on table %s. [Invalid arguments]" % self.name)
            return -1
        data = {k.encode(): self._read(k, v) for k, v in q.items()}
        return TableEntry(self, {b"pg_id": pg_id, b"pg_queue": pg_queue}, data)


class TmQueueCounter(_TmQueueTable):
    """bfrt.tf1.tm.counter.queue: per pipe, keyed by pg_id and pg_queue."""

    FIELDS = ("usage_cells", "watermark_cells", "drop_count_packets")

    def __init__(self, root, parent):
        _TmQueueTable.__init__(self, root, parent, "queue", "tf1.tm.counter.queue")

    def _entries(self):
        return self._root.queues

    def _defaults(self):
        return dict.fromkeys(self.FIELDS, 0)

    def _mod(self, pg_id=None, pg_queue=None, pipe=None, gress_dir=None, prsr_id=None, **fields):
        q = self._queue("table_entry_mod", pipe, pg_id, pg_queue)
        if q is None:
            self._fail("table_entry_mod", BF_INVALID_ARG)
        for k, v in fields.items():
            if v is not None:
                q[k] = self._check_width(k, v, 64)


TM_PORTS_PER_PIPE = 72  # Tofino 1: 18 port groups of 4 channels
PRIO_CHOICES = ("LOW", "0", "1", "2", "3", "4", "5", "6", "7", "HIGH")


class TmPortCfg(_Table):
    """bfrt.tf1.tm.port.cfg: a port's place in its port group, read only
    (bf_rt_tm_tf1.json). A port has 8 queues (port_queues_count), and the
    32 logical queue ids map onto them modulo 8 (ingress_qid_map);
    egress_qid_queues[qid] is the logical queue's pg_queue: pg_port_nr * 8
    + qid % 8, as bfshell shows it for a port in its default carving."""

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "cfg", "tf1.tm.port.cfg")
        self.get = _table_method(self, "get", ("dev_port",) + GET_OPTS + TARGET, self._get)

    def _get(self, dev_port=None, print_ents=True, **opts):
        dev = self._check_width("dev_port", dev_port, 9)
        if dev_port is None or dev & 0x7f >= TM_PORTS_PER_PIPE:
            if print_ents:
                print("Error: table_entry_get failed on table %s. [Invalid arguments]" % self.name)
            return -1
        nr = dev & 3
        data = {b"pg_id": (dev & 0x7f) >> 2, b"pg_port_nr": nr, b"port_queues_count": 8,
                b"ingress_qid_map": [q % 8 for q in range(32)],
                b"egress_qid_queues": [nr * 8 + q % 8 for q in range(32)]}
        return TableEntry(self, {b"dev_port": dev}, data)


class TmQueueSchedCfg(_TmQueueTable):
    """bfrt.tf1.tm.queue.sched_cfg: per pipe, keyed by pg_id and pg_queue
    (bf_rt_tm_tf1.json). min_priority and max_priority are string choices
    (LOW, 0..7, HIGH); a read gives a priority back as BF Runtime's
    prio_to_str map spells it (bf_rt_tm_table_helper_sched.cpp), where
    priority 0 is "LOW" (the map's first entry for the value) and 7 is "7".
    The defaults are the SDE's for Tofino 1 (tm_tofino_default.c,
    bf_tm_tofino_set_sch_default_for_q): priority 0, DWRR weight 1023,
    scheduling enabled."""

    FIELDS = ("min_priority", "max_priority", "dwrr_weight", "min_rate_enable", "max_rate_enable", "scheduling_enable")
    READ = {0: "LOW", 1: "1", 2: "2", 3: "3", 4: "4", 5: "5", 6: "6", 7: "7"}

    def __init__(self, root, parent):
        _TmQueueTable.__init__(self, root, parent, "sched_cfg", "tf1.tm.queue.sched_cfg")

    def _entries(self):
        return self._root.sched

    def _defaults(self):
        return {"min_priority": 0, "max_priority": 0, "dwrr_weight": 1023,
                "min_rate_enable": False, "max_rate_enable": False, "scheduling_enable": True}

    def _read(self, field, v):
        return self.READ[v] if field.endswith("_priority") else v

    def _mod(self, pg_id=None, pg_queue=None, pipe=None, gress_dir=None, prsr_id=None, **fields):
        q = self._queue("table_entry_mod", pipe, pg_id, pg_queue)
        if q is None:
            self._fail("table_entry_mod", BF_INVALID_ARG)
        for k, v in fields.items():
            if v is None:
                continue
            if k.endswith("_priority"):
                if not isinstance(v, str) or v not in PRIO_CHOICES:
                    # bfrt_python prints an unknown choice and goes on.
                    print("Error: %r is not a valid choice for %s: %s" % (v, k, ", ".join(PRIO_CHOICES)))
                    continue
                q[k] = {"LOW": 0, "HIGH": 7}.get(v, None)
                if q[k] is None:
                    q[k] = int(v)
            elif k == "dwrr_weight":
                q[k] = self._check_width(k, v, 16)
            else:
                q[k] = bool(v)


class TmQueueCfg(_TmQueueTable):
    """bfrt.tf1.tm.queue.cfg's pfc_cos: the PFC class a queue honours;
    "by default, all queues use mapping CoS zero" (bf_rt_tm_tf1.json)."""

    FIELDS = ("pfc_cos",)

    def __init__(self, root, parent):
        _TmQueueTable.__init__(self, root, parent, "cfg", "tf1.tm.queue.cfg")

    def _entries(self):
        return self._root.queue_cfg

    def _defaults(self):
        return {"pfc_cos": 0}

    def _mod(self, pg_id=None, pg_queue=None, pipe=None, gress_dir=None, prsr_id=None, pfc_cos=None):
        q = self._queue("table_entry_mod", pipe, pg_id, pg_queue)
        if q is None:
            self._fail("table_entry_mod", BF_INVALID_ARG)
        if pfc_cos is not None:
            q["pfc_cos"] = self._check_width("pfc_cos", pfc_cos, 8)


# ---- mirror sessions and the packet replication engine ----


class MirrorCfg(_Table):
    """bfrt.mirror.cfg ($mirror.cfg, bf_rt_mirror_tf1.json): keyed by
    $sid, added with the $normal action's fields; a read gives the data
    field names with their $ (bytes)."""

    NORMAL = ("session_enable", "direction", "ucast_egress_port", "ucast_egress_port_valid", "egress_port_queue",
              "ingress_cos", "packet_color", "level1_mcast_hash", "level2_mcast_hash", "mcast_grp_a", "mcast_grp_a_valid",
              "mcast_grp_b", "mcast_grp_b_valid", "mcast_l1_xid", "mcast_l2_xid", "mcast_rid", "icos_for_copy_to_cpu",
              "copy_to_cpu", "max_pkt_len")

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "cfg", "mirror.cfg")
        self.add_with_normal = _table_method(self, "add_with_normal", ("sid",) + self.NORMAL + TARGET, self._add)
        self.get = _table_method(self, "get", ("sid",) + GET_OPTS + TARGET, self._get)
        self.delete = _table_method(self, "delete", ("sid",) + TARGET, self._delete)

    def _add(self, sid=None, direction=None, **data):
        sid = self._check_width("$sid", sid, 16)
        if not 1 <= sid <= 1023:
            self._fail("table_entry_add", BF_INVALID_ARG)
        if direction not in ("INGRESS", "EGRESS", "BOTH"):
            print("Error: Invalid choice %r for field $direction" % (direction,))
            return None
        if sid in self._root.mirrors:
            self._fail("table_entry_add", BF_ALREADY_EXISTS)
        e = {"$direction": direction, "$session_enable": bool(data.get("session_enable")),
             "$ucast_egress_port": self._check_width("$ucast_egress_port", data.get("ucast_egress_port"), 32),
             "$ucast_egress_port_valid": bool(data.get("ucast_egress_port_valid")),
             "$egress_port_queue": self._check_width("$egress_port_queue", data.get("egress_port_queue"), 32),
             "$max_pkt_len": self._check_width("$max_pkt_len", data.get("max_pkt_len", 16384), 16)}
        self._root.mirrors[sid] = e
        return None

    def _get(self, sid=None, print_ents=True, **opts):
        sid = self._check_width("$sid", sid, 16)
        e = self._root.mirrors.get(sid)
        if e is None:
            return -1
        return TableEntry(self, {b"$sid": sid}, {k.encode(): v for k, v in e.items()}, "$normal")

    def _delete(self, sid=None, **target):
        sid = self._check_width("$sid", sid, 16)
        if sid not in self._root.mirrors:
            self._fail("table_entry_delete", BF_OBJECT_NOT_FOUND)
        del self._root.mirrors[sid]


class PreNode(_Table):
    """bfrt.pre.node ($pre.node, bf_rt_pre_tf1.json)."""

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "node", "pre.node")
        data = ("MULTICAST_RID", "MULTICAST_LAG_ID", "DEV_PORT")
        self.add = _table_method(self, "add", ("MULTICAST_NODE_ID",) + data + TARGET, self._add)
        self.get = _table_method(self, "get", ("MULTICAST_NODE_ID",) + GET_OPTS + TARGET, self._get)
        self.delete = _table_method(self, "delete", ("MULTICAST_NODE_ID",) + TARGET, self._delete)

    def _add(self, MULTICAST_NODE_ID=None, MULTICAST_RID=None, MULTICAST_LAG_ID=None, DEV_PORT=None, **target):
        n = self._check_width("$MULTICAST_NODE_ID", MULTICAST_NODE_ID, 32)
        if n in self._root.pre_nodes:
            self._fail("table_entry_add", BF_ALREADY_EXISTS)
        # A port bitmap on the switch: read back ascending, each port once
        # (bf_rt_pre_table_data_impl.hpp, setPortBitmap).
        ports = sorted({self._check_width("$DEV_PORT", p, 32) for p in (DEV_PORT or [])})
        self._root.pre_nodes[n] = {"$MULTICAST_RID": self._check_width("$MULTICAST_RID", MULTICAST_RID, 16),
                                   "$MULTICAST_LAG_ID": list(MULTICAST_LAG_ID or []), "$DEV_PORT": ports}
        # The multicast manager's handle for the node: the lowest id its
        # allocator has free (open-p4studio at e9eed54a, pkgsrc/bf-drivers/
        # src/mc_mgr/mc_mgr_node.c:26 mc_mgr_node_alloc, mc_mgr_handle.c:89
        # mc_mgr_encode_l1_node_hdl, pkgsrc/target-utils/src/id/id.c:179
        # bf_id_allocator_allocate: the first id not set in a Judy1 array).
        used = set(self._root.pre_node_handles.values())
        self._root.pre_node_handles[n] = next(h for h in range(len(used) + 1) if h not in used)

    def _get(self, MULTICAST_NODE_ID=None, print_ents=True, **opts):
        n = self._check_width("$MULTICAST_NODE_ID", MULTICAST_NODE_ID, 32)
        e = self._root.pre_nodes.get(n)
        if e is None:
            return -1
        return TableEntry(self, {b"$MULTICAST_NODE_ID": n}, {k.encode(): v for k, v in e.items()})

    def _delete(self, MULTICAST_NODE_ID=None, **target):
        n = self._check_width("$MULTICAST_NODE_ID", MULTICAST_NODE_ID, 32)
        if n not in self._root.pre_nodes:
            self._fail("table_entry_delete", BF_OBJECT_NOT_FOUND)
        if any(n in g["$MULTICAST_NODE_ID"] for g in self._root.pre_groups.values()):
            self._fail("table_entry_delete", BF_INVALID_ARG)  # a group still holds it
        del self._root.pre_nodes[n]
        del self._root.pre_node_handles[n]  # released (mc_mgr_node.c:83)


class PreMgid(_Table):
    """bfrt.pre.mgid ($pre.mgid): a group's nodes, with their L1 XIDs."""

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "mgid", "pre.mgid")
        data = ("MULTICAST_NODE_ID", "MULTICAST_NODE_L1_XID_VALID", "MULTICAST_NODE_L1_XID",
                "MULTICAST_ECMP_ID", "MULTICAST_ECMP_L1_XID_VALID", "MULTICAST_ECMP_L1_XID")
        self.add = _table_method(self, "add", ("MGID",) + data + TARGET, self._add)
        self.get = _table_method(self, "get", ("MGID",) + GET_OPTS + TARGET, self._get)
        self.delete = _table_method(self, "delete", ("MGID",) + TARGET, self._delete)

    def _add(self, MGID=None, MULTICAST_NODE_ID=None, MULTICAST_NODE_L1_XID_VALID=None, MULTICAST_NODE_L1_XID=None, **other):
        g = self._check_width("$MGID", MGID, 16)
        nodes = list(MULTICAST_NODE_ID or [])
        if g == 0 or len(MULTICAST_NODE_L1_XID_VALID or []) != len(nodes) or len(MULTICAST_NODE_L1_XID or []) != len(nodes):
            self._fail("table_entry_add", BF_INVALID_ARG)
        if g in self._root.pre_groups:
            self._fail("table_entry_add", BF_ALREADY_EXISTS)
        for n in nodes:
            if n not in self._root.pre_nodes:
                self._fail("table_entry_add", BF_OBJECT_NOT_FOUND)
        self._root.pre_groups[g] = {"$MULTICAST_NODE_ID": nodes, "$MULTICAST_NODE_L1_XID_VALID": list(MULTICAST_NODE_L1_XID_VALID),
                                    "$MULTICAST_NODE_L1_XID": list(MULTICAST_NODE_L1_XID)}

    def _get(self, MGID=None, print_ents=True, **opts):
        g = self._check_width("$MGID", MGID, 16)
        e = self._root.pre_groups.get(g)
        if e is None:
            return -1
        # The members in the order of their nodes' handles, not the add's:
        # BF Runtime reads them with the multicast manager's first and
        # next-i member calls (open-p4studio pkgsrc/bf-drivers/src/bf_rt/
        # bf_rt_pre/bf_rt_pre_table_impl.cpp:1491 and :1578), which walk
        # the group's node_mbrs map (mc_mgr.c:859 and :929), keyed by node
        # handle (mc_mgr.c:1546, bf_map_add(mbrs_map, node->handle, node)),
        # a Judy map walked in ascending key order (pkgsrc/target-utils/
        # src/map/map.c:78, bf_map_get_first: JLF). The L1 XIDs go with
        # their nodes.
        h = self._root.pre_node_handles
        order = sorted(range(len(e["$MULTICAST_NODE_ID"])), key=lambda i: h[e["$MULTICAST_NODE_ID"][i]])
        return TableEntry(self, {b"$MGID": g}, {k.encode(): [v[i] for i in order] for k, v in e.items()})

    def _delete(self, MGID=None, **target):
        g = self._check_width("$MGID", MGID, 16)
        if g not in self._root.pre_groups:
            self._fail("table_entry_delete", BF_OBJECT_NOT_FOUND)
        del self._root.pre_groups[g]


class FakePlatform:
    """What the agent reaches outside bfrt_python (testbed_agent.SdePlatform):
    the port manager's FEC counters, preset by a test, and the frames sent
    on the CPU port's netdev, recorded. Each call checks, as a bfrt call
    does, that no other runs at once."""

    def __init__(self, root):
        self._root = root
        self.rs = {}  # dev_port -> bf_port_rs_fec_status_and_counters_get's outputs
        self.fc = {}  # (dev_port, vl) -> (block lock, corrected, uncorrected)
        self.sent = []  # (iface, frame)

    def rs_fec(self, dev_id, dev_port):
        self._root._enter("bf_port_rs_fec_status_and_counters_get", "call", {"dev_port": dev_port})
        try:
            r = dict.fromkeys(("fec_corr_cnt", "fec_uncorr_cnt", "fec_ser_lane_0", "fec_ser_lane_1", "fec_ser_lane_2", "fec_ser_lane_3"), 0)
            r.update(hi_ser=False, fec_align_status=True)
            r.update(self.rs.get(dev_port, {}))
            return r
        finally:
            self._root._leave()

    def fc_fec(self, dev_id, dev_port, vl):
        self._root._enter("bf_port_fc_fec_status_and_counters_get", "call", {"dev_port": dev_port, "vl": vl})
        try:
            return self.fc.get((dev_port, vl), (True, 0, 0))
        finally:
            self._root._leave()

    def send(self, iface, frame):
        self.sent.append((iface, bytes(frame)))


# ---- P4 objects ----


class Register(_Table):
    """A register: REGISTER_INDEX, data "<Control>.<register>.f1", one
    value per pipe."""

    def __init__(self, root, parent, control, name, size=512, bits=32):
        _Table.__init__(self, root, parent, name, "pipe.%s.%s" % (control, name))
        self.field = "%s.%s.f1" % (control, name)
        self.size = size
        self.bits = bits
        self.values = [[0] * PIPES for _ in range(size)]
        self.get = _table_method(self, "get", ("REGISTER_INDEX",) + GET_OPTS + TARGET, self._get)
        self.mod = _table_method(self, "mod", ("REGISTER_INDEX", "f1") + TARGET, self._mod)
        self.clear = _table_method(self, "clear", TARGET + ("batch",), self._clear)

    def _get(self, REGISTER_INDEX=None, print_ents=True, pipe=None, **opts):
        i = self._check_width("$REGISTER_INDEX", REGISTER_INDEX, 32)
        if i >= self.size:
            if print_ents:
                print("Error: table_entry_get failed on table %s. [Invalid arguments]" % self.name)
            return -1
        v = list(self.values[i]) if pipe is None else [self.values[i][pipe]]
        return TableEntry(self, {b"$REGISTER_INDEX": i}, {self.field.encode(): v})

    def _mod(self, REGISTER_INDEX=None, f1=None, pipe=None, gress_dir=None, prsr_id=None):
        i = self._check_width("$REGISTER_INDEX", REGISTER_INDEX, 32)
        v = self._check_width(self.field, f1, self.bits)
        if i >= self.size:
            self._fail("table_entry_mod", BF_INVALID_ARG)
        for p in (range(PIPES) if pipe is None else [pipe]):
            self.values[i][p] = v

    def _clear(self, **target):
        self.values = [[0] * PIPES for _ in range(self.size)]


class MatchTable(_Table):
    """A match-action table. keys: (full name, parameter, match type, bits);
    actions: full action name -> [(parameter, bits)]."""

    def __init__(self, root, parent, control, name, keys, actions, size=1024):
        _Table.__init__(self, root, parent, name, "pipe.%s.%s" % (control, name))
        self.keys = keys
        self.actions = actions
        self.size = size
        self.entries = {}  # key tuple -> (key dict, action, data dict)
        kparams = []
        for full, p, mt, bits in keys:
            kparams += {"TERNARY": [p, p + "_mask"], "LPM": [p, p + "_p_length"],
                        "RANGE": [p + "_start", p + "_end"]}.get(mt, [p])
        self.key_params = tuple(kparams)
        for act, params in actions.items():
            short = act[act.rfind(".") + 1:]
            allowed = self.key_params + tuple(p for p, _ in params) + TARGET
            setattr(self, "add_with_" + short, _table_method(self, "add_with_" + short, allowed, self._adder(act, params)))
            setattr(self, "mod_with_" + short, _table_method(self, "mod_with_" + short, allowed, self._modder(act, params)))
        self.delete = _table_method(self, "delete", self.key_params + TARGET + ("handle",), self._delete)
        self.get = _table_method(self, "get", self.key_params + GET_OPTS + TARGET, self._get)
        self.clear = _table_method(self, "clear", TARGET + ("batch",), self._clear)
        self.info = _table_method(self, "info", ("return_info", "print_info", "from_hw", "pipe"), self._info)

    def _key(self, kw):
        # The driver keeps a ternary value ANDed with its mask and an LPM
        # value without the bits past its prefix (bf_rt_p4_table_key_impl.cpp,
        # setValueAndMaskInternal).
        key = {}
        for full, p, mt, bits in self.keys:
            if mt == "TERNARY":
                mask = kw.get(p + "_mask")
                mask = (1 << bits) - 1 if mask is None else self._check_width(p + "_mask", mask, bits)
                key[full.encode()] = (self._check_width(p, kw.get(p), bits) & mask, mask)
            elif mt == "LPM":
                plen = self._check_width(p + "_p_length", kw.get(p + "_p_length", bits), 16)
                low = max(bits - plen, 0)
                key[full.encode()] = (self._check_width(p, kw.get(p), bits) & ~((1 << low) - 1), plen)
            elif mt == "RANGE":
                key[full.encode()] = (self._check_width(p, kw.get(p + "_start"), bits),
                                      self._check_width(p, kw.get(p + "_end"), bits))
            else:
                key[full.encode()] = self._check_width(p, kw.get(p), bits)
        return key

    def _adder(self, act, params):
        def add(**kw):
            key = self._key(kw)
            data = {p.encode(): self._check_width(p, kw.get(p), bits) for p, bits in params}
            k = tuple(sorted(key.items()))
            if k in self.entries:
                self._fail("table_entry_add", BF_ALREADY_EXISTS)
            if len(self.entries) >= self.size:
                self._fail("table_entry_add", 2)
            self.entries[k] = (key, act, data)
        return add

    def _modder(self, act, params):
        # bfrtTable's mod_with_<action>: the entry of that key takes the
        # action and its data (pipe_mgr's entry modify); no entry is
        # BF_OBJECT_NOT_FOUND.
        def mod(**kw):
            key = self._key(kw)
            data = {p.encode(): self._check_width(p, kw.get(p), bits) for p, bits in params}
            k = tuple(sorted(key.items()))
            if k not in self.entries:
                self._fail("table_entry_mod", BF_OBJECT_NOT_FOUND)
            self.entries[k] = (key, act, data)
        return mod

    def _delete(self, handle=None, pipe=None, gress_dir=None, prsr_id=None, **kw):
        k = tuple(sorted(self._key(kw).items()))
        if k not in self.entries:
            self._fail("table_entry_delete", BF_OBJECT_NOT_FOUND)
        del self.entries[k]

    def _get(self, regex=False, print_ents=True, return_ents=True, table=False, from_hw=False, handle=None,
             pipe=None, gress_dir=None, prsr_id=None, **kw):
        if regex or table:
            # The key parameters given are patterns; absent ones accept all.
            out = []
            for key, act, data in self.entries.values():
                out.append(TableEntry(self, dict(key), dict(data), act))
            return out if return_ents else None
        e = self.entries.get(tuple(sorted(self._key(kw).items())))
        if e is None:
            return -1
        return TableEntry(self, dict(e[0]), dict(e[2]), e[1])

    def _clear(self, **target):
        self.entries.clear()

    def _info(self, return_info=False, print_info=True, **opts):
        res = {"full_name": self.name, "usage": len(self.entries), "capacity": self.size,
               "key_fields": [{"name": full, "type": mt, "size": bits} for full, p, mt, bits in self.keys]}
        if return_info:
            return res


# ---- packet generator ----


class PktgenPortCfg(_Table):
    DATA = ("recirculation_enable", "pktgen_enable", "pattern_matching_enable", "clear_port_down_enable")

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "port_cfg", "tf1.pktgen.port_cfg")
        self.mod = _table_method(self, "mod", ("dev_port",) + self.DATA + TARGET, self._mod)
        self.get = _table_method(self, "get", ("dev_port",) + GET_OPTS + TARGET, self._get)

    def _port(self, dev_port):
        dev = self._check_width("dev_port", dev_port, 32)
        if dev >> 7 >= PIPES or not 68 <= dev & 0x7F <= 71:
            self._fail("table_entry_mod", BF_INVALID_ARG)  # not a pktgen port
        return self._root.pktgen_ports.setdefault(dev, dict.fromkeys(self.DATA, False))

    def _mod(self, dev_port=None, pipe=None, gress_dir=None, prsr_id=None, **data):
        cfg = self._port(dev_port)
        for k, v in data.items():
            if v is not None:
                cfg[k] = bool(v)

    def _get(self, dev_port=None, **opts):
        return TableEntry(self, {b"dev_port": dev_port}, {k.encode(): v for k, v in self._port(dev_port).items()})


class PktgenBuffer(_Table):
    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "pkt_buffer", "tf1.pktgen.pkt_buffer")
        self.mod = _table_method(self, "mod", ("pkt_buffer_offset", "pkt_buffer_size", "buffer") + TARGET, self._mod)

    def _mod(self, pkt_buffer_offset=None, pkt_buffer_size=None, buffer=None, pipe=None, gress_dir=None, prsr_id=None):
        off = self._check_width("pkt_buffer_offset", pkt_buffer_offset, 32)
        size = self._check_width("pkt_buffer_size", pkt_buffer_size, 32)
        data = bytes(buffer or b"")
        if off % 16 or off + size > 16384 or len(data) != size:
            self._fail("table_entry_mod", BF_INVALID_ARG)
        for p in (range(PIPES) if pipe is None else [pipe]):
            self._root.pkt_buffer[p][off:off + size] = data


class PktgenAppCfg(_Table):
    """bfrt.tf1.pktgen.app_cfg: 8 applications per pipe. Packets are
    counted by the wall clock from when an application is enabled: the first
    after timer_nanosec, then one every ipg."""

    COMMON = ("app_enable", "pkt_len", "pkt_buffer_offset", "pipe_local_source_port", "increment_source_port",
              "batch_count_cfg", "packets_per_batch_cfg", "ibg", "ibg_jitter", "ipg", "ipg_jitter",
              "batch_counter", "pkt_counter", "trigger_counter")
    ACTIONS = {"trigger_timer_one_shot": ("timer_nanosec",), "trigger_timer_periodic": ("timer_nanosec",),
               "trigger_port_down": (), "trigger_recirc_pattern": ("pattern_value", "pattern_mask")}

    def __init__(self, root, parent):
        _Table.__init__(self, root, parent, "app_cfg", "tf1.pktgen.app_cfg")
        self.apps = {(p, a): self._blank() for p in range(PIPES) for a in range(8)}
        for act, params in self.ACTIONS.items():
            setattr(self, "mod_with_" + act, _table_method(self, "mod_with_" + act, ("app_id",) + params + self.COMMON + TARGET, self._modder(act)))
        self.get = _table_method(self, "get", ("app_id",) + GET_OPTS + TARGET, self._get)

    def _blank(self):
        a = dict.fromkeys(self.COMMON, 0)
        a.update(app_enable=False, increment_source_port=False, action="trigger_timer_one_shot",
                 timer_nanosec=0, started=None, base=0)
        return a

    def _sent(self, a, now=None):
        if not a["app_enable"] or a["started"] is None:
            return a["base"]
        now = time.monotonic_ns() if now is None else now
        total = (a["batch_count_cfg"] + 1) * (a["packets_per_batch_cfg"] + 1)
        elapsed = now - a["started"] - a["timer_nanosec"]
        n = 0 if elapsed < 0 else min(total, elapsed // max(1, a["ipg"]) + 1)
        return a["base"] + n

    def _modder(self, act):
        def mod(app_id=None, pipe=None, gress_dir=None, prsr_id=None, **data):
            app = self._check_width("app_id", app_id, 32)
            if app >= 8:
                self._fail("table_entry_mod", BF_OBJECT_NOT_FOUND)
            now = time.monotonic_ns()
            for p in (range(PIPES) if pipe is None else [pipe]):
                a = self.apps[(p, app)]
                a["base"] = self._sent(a, now)
                a["started"] = None
                for k, v in data.items():
                    if v is None:
                        continue
                    if k in ("app_enable", "increment_source_port"):
                        a[k] = bool(v)
                    else:
                        a[k] = self._check_width(k, v, 64 if k.endswith("counter") else 32)
                    if k == "pkt_counter":
                        a["base"] = a[k]
                a["action"] = act
                if a["app_enable"]:
                    src = p << 7 | a["pipe_local_source_port"]
                    if not self._root.pktgen_ports.get(src, {}).get("pktgen_enable"):
                        a["app_enable"] = False
                        self._fail("table_entry_mod", BF_INVALID_ARG)  # pktgen is off on the source port
                    if a["pkt_buffer_offset"] + a["pkt_len"] > 16384:
                        a["app_enable"] = False
                        self._fail("table_entry_mod", BF_INVALID_ARG)
                    a["started"] = now
        return mod

    def _get(self, app_id=None, pipe=None, print_ents=True, **opts):
        app = self._check_width("app_id", app_id, 32)
        if pipe is None:
            self._fail("table_entry_get", BF_INVALID_ARG)  # app_cfg reads need one pipe
        a = self.apps.get((pipe, app))
        if a is None:
            return -1
        data = {k.encode(): a[k] for k in self.COMMON}
        data[b"pkt_counter"] = self._sent(a)
        for p in self.ACTIONS[a["action"]]:
            data[p.encode()] = a.get(p, 0)
        return TableEntry(self, {b"app_id": app}, data, a["action"])


# ---- the root ----


class FakeBfrt:
    """The bfrt root, running one P4 program (LinkGuardian's sender objects,
    whatever its name)."""

    def __init__(self, program="sender"):
        self.p4_programs_list = [program]
        self.ports = {}  # dev_port -> $PORT fields
        self.counters = {}  # dev_port -> $PORT_STAT field -> value
        self.link = {}  # dev_port -> link up (default: up when enabled)
        self.tx_tstamp = {}  # dev_port -> (value, id): the MAC's last captured tx timestamp
        self.queues = {}  # (pipe, pg_id, pg_queue) -> counters
        self.sched = {}  # (pipe, pg_id, pg_queue) -> scheduler fields
        self.pktgen_ports = {}
        self.pkt_buffer = [bytearray(16384) for _ in range(PIPES)]
        self.calls = []  # (table, method, kwargs), every call
        self.concurrent_calls = 0
        self.call_delay = 0.0
        self._fail_next = None
        self._busy = threading.Lock()
        self._mu = threading.Lock()

        self.queue_cfg = {}  # (pipe, pg_id, pg_queue) -> tf1.tm.queue.cfg fields
        self.mirrors = {}  # sid -> $mirror.cfg fields
        self.pre_nodes = {}  # node id -> $pre.node fields
        self.pre_node_handles = {}  # node id -> the multicast manager's handle
        self.pre_groups = {}  # mgid -> $pre.mgid fields
        self.threads = set()  # the threads bfrt was called from
        self.testbed_platform = FakePlatform(self)
        MirrorCfg(self, Node("mirror", self))
        pre = Node("pre", self)
        PreNode(self, pre)
        PreMgid(self, pre)
        port = Node("port", self)
        PortTable(self, port)
        PortStatTable(self, port)
        tf1 = Node("tf1", self)
        tm = Node("tm", tf1)
        TmQueueCounter(self, Node("counter", tm))
        TmPortCfg(self, Node("port", tm))
        tmq = Node("queue", tm)
        TmQueueSchedCfg(self, tmq)
        TmQueueCfg(self, tmq)
        pg = Node("pktgen", tf1)
        PktgenPortCfg(self, pg)
        PktgenBuffer(self, pg)
        PktgenAppCfg(self, pg)

        pipe = Node("pipe", Node(program, self))
        eg = Node("SwitchEgress", pipe)
        ig = Node("SwitchIngress", pipe)
        Register(self, eg, "SwitchEgress", "reg_seq_no", bits=16)
        Register(self, eg, "SwitchEgress", "reg_era", bits=1)
        Register(self, eg, "SwitchEgress", "reg_recirc_buffer_pfc_pause_threshold")
        Register(self, eg, "SwitchEgress", "reg_recirc_buffer_pfc_resume_threshold")
        Register(self, ig, "SwitchIngress", "reg_ack_timeout_count")
        MatchTable(self, eg, "SwitchEgress", "link_protect",
                   [("eg_intr_md.egress_port", "egress_port", "EXACT", 9)],
                   {"SwitchEgress.protect": [("dummy_pkt_max_count", 16), ("blocking_mode", 1)]})
        MatchTable(self, eg, "SwitchEgress", "decide_to_emulate_corruption",
                   [("eg_intr_md.egress_port[7:0]", "egress_port_7_0_", "EXACT", 8)],
                   {"SwitchEgress.do_corruption_emulation": [("seqno_lookup_idx", 9)]})
        MatchTable(self, ig, "SwitchIngress", "retx_mcast_buffered_pkt",
                   [("ig_md.egress_port", "egress_port", "EXACT", 9)],
                   {"SwitchIngress.set_retx_copies": [("num_copies", 8)]})
        MatchTable(self, ig, "SwitchIngress", "l2_forward",
                   [("hdr.ethernet.dst_addr", "dst_addr", "EXACT", 48)],
                   {"SwitchIngress.forward": [("port", 9)], "SwitchIngress.forward_to_queue": [("port", 9), ("qid", 5)]})
        MatchTable(self, ig, "SwitchIngress", "emulate_random_pkt_drop",
                   [("ig_md.rand_num", "rand_num", "EXACT", 20)],
                   {"SwitchIngress.drop": []}, size=1 << 20)
        MatchTable(self, ig, "SwitchIngress", "decide_retx_or_drop",
                   [("ig_md.is_missing_hole_1", "is_missing_hole_1", "TERNARY", 1),
                    ("$MATCH_PRIORITY", "MATCH_PRIORITY", "EXACT", 32)],
                   {"SwitchIngress.retx": [], "SwitchIngress.drop_buffered": []})

    # -- call accounting --

    def _enter(self, table, method, kwargs):
        if not self._busy.acquire(blocking=False):
            with self._mu:
                self.concurrent_calls += 1
            raise RuntimeError("bfrt_python entered from two threads at once")
        with self._mu:
            self.calls.append((table, method, dict(kwargs)))
            self.threads.add(threading.get_ident())
            fail, self._fail_next = self._fail_next, None
        if self.call_delay:
            time.sleep(self.call_delay)
        if fail is not None:
            self._busy.release()
            raise fail

    def _leave(self):
        self._busy.release()

    # -- test controls --

    def fail_next_call(self, exc):
        """The next table call raises exc."""
        with self._mu:
            self._fail_next = exc

    def set_counter(self, dev_port, name, value):
        self.counters.setdefault(dev_port, {})[name] = value

    def set_queue(self, pipe, pg_id, pg_queue, usage=0, watermark=0, drops=0):
        self.queues[(pipe, pg_id, pg_queue)] = {"usage_cells": usage, "watermark_cells": watermark, "drop_count_packets": drops}

    def set_link(self, dev_port, up):
        self.link[dev_port] = up

    def set_tx_tstamp(self, dev_port, value, ts_id):
        self.tx_tstamp[dev_port] = (value, ts_id)

    def calls_to(self, table, method=None):
        with self._mu:
            return [kw for t, m, kw in self.calls if t == table and (method is None or m == method)]
