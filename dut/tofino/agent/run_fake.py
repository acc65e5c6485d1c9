"""Run testbed_agent.py against the stand-in bfrt (fake_bfrt.py), loaded the
way bfrt_python loads a -b script.

    python3 run_fake.py [--port N] [--program NAME]
                        [--queue PIPE:PG_ID:PG_QUEUE:USAGE:WATERMARK:DROPS]...
                        [--counter DEV_PORT:NAME:VALUE]...
                        [--fec DEV_PORT:CORRECTED:UNCORRECTED]...

bfrtcli.start_bfrt runs the script as exec(open(path).read()) inside a
function of the bfrtcli module, whose globals hold ``bfrt``; this does the
same, so the agent runs here exactly as it starts on a switch. It listens on
127.0.0.1:N (0, the default here: a free port) and prints
"... listening on 127.0.0.1:<port>"; it serves until killed. --queue and
--counter preset traffic-manager queues and port counters.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.dont_write_bytecode = True
sys.path.insert(0, HERE)

import fake_bfrt  # noqa: E402

# A module namespace like bfrtcli's: bfrt is one of its globals, and the
# script is exec'd inside one of its functions.
_BFRTCLI = """
def start_bfrt(udf):
    exec(open(udf).read())
"""


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--program", default="sender")
    ap.add_argument("--queue", action="append", default=[])
    ap.add_argument("--counter", action="append", default=[])
    ap.add_argument("--fec", action="append", default=[], help="DEV_PORT:CORRECTED:UNCORRECTED, the port manager's RS-FEC counters")
    a = ap.parse_args(argv)

    bfrt = fake_bfrt.FakeBfrt(program=a.program)
    for q in a.queue:
        pipe, pg, pq, usage, wm, drops = (int(x) for x in q.split(":"))
        bfrt.set_queue(pipe, pg, pq, usage, wm, drops)
    for c in a.counter:
        dev, name, value = c.split(":")
        bfrt.set_counter(int(dev), name, int(value))
    for f in a.fec:
        dev, corr, uncorr = (int(x) for x in f.split(":"))
        bfrt.testbed_platform.rs[dev] = {"fec_corr_cnt": corr, "fec_uncorr_cnt": uncorr}

    os.environ["TESTBED_AGENT_PORT"] = str(a.port)
    bfrtcli = {"__name__": "bfrtcli", "bfrt": bfrt}
    exec(_BFRTCLI, bfrtcli)
    bfrtcli["start_bfrt"](os.path.join(HERE, "testbed_agent.py"))


if __name__ == "__main__":
    main(sys.argv[1:])
