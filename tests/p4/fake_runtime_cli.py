#!/usr/bin/python3
"""A stand-in for BMv2's runtime CLI (simple_switch_CLI) in the unit tests:
the same prompt and the same answer formats for the commands rina-bmv2ctl
sends, no switch behind it. Every command line is appended to --log.

  fake_runtime_cli.py --log FILE [--fail-on WORD] [--die-on WORD]
                      [--hang-on WORD] [--refuse-start] [--packets N]
                      --thrift-ip IP --thrift-port PORT

A command containing WORD answers an error (--fail-on), ends the CLI
(--die-on, as a thrift exception does) or never answers (--hang-on).
"""
import argparse
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--log", required=True)
p.add_argument("--fail-on")
p.add_argument("--die-on")
p.add_argument("--hang-on")
p.add_argument("--refuse-start", action="store_true")
p.add_argument("--packets", type=int, default=0)
p.add_argument("--thrift-ip")
p.add_argument("--thrift-port")
args = p.parse_args()

if args.refuse_start:
    print("Could not connect to thrift client on port %s" % args.thrift_port)
    sys.exit(1)
print("Obtaining JSON from switch...\nDone\nControl utility for runtime P4 table manipulation")
handles = {}
log = open(args.log, "a")
while True:
    try:
        line = input("RuntimeCmd: ")
    except EOFError:
        print()
        break
    log.write(line + "\n")
    log.flush()
    words = line.split()
    if not words:
        continue
    if args.die_on and args.die_on in line:
        print("Traceback (most recent call last):\nthrift.transport.TTransport.TTransportException")
        sys.exit(1)
    if args.hang_on and args.hang_on in line:
        time.sleep(3600)
    if args.fail_on and args.fail_on in line:
        print("Invalid table operation (DUPLICATE_ENTRY)")
        continue
    if words[0] == "table_add":
        h = handles.get(words[1], 0)
        handles[words[1]] = h + 1
        print("Adding entry to exact match table %s\nEntry has been added with handle %d" %
              (words[1], h))
    elif words[0] == "mc_node_create":
        h = handles.get("node", 0)
        handles["node"] = h + 1
        print("Creating node with rid %s , port map 1 and lag map \nnode was created with "
              "handle %d" % (words[1], h))
    elif words[0] == "counter_read":
        print("%s[%s]=  (%d bytes, %d packets)" % (words[1], words[2], 100 * args.packets,
                                                   args.packets))
    elif words[0] == "register_read":
        print("%s[%s]= 0" % (words[1], words[2]))
    elif words[0] in ("table_delete", "mc_mgrp_create", "mc_node_associate",
                      "mc_node_dissociate", "mc_node_destroy", "mc_mgrp_destroy",
                      "register_write", "counter_write", "reset_state"):
        pass
    else:
        print("*** Unknown syntax: %s" % line)
