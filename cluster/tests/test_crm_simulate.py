#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""test_crm_simulate.py AGENT

Pacemaker's scheduler, offline (crm_simulate, pacemaker-cli-utils), on a
two-host cluster running ocf:failoverd:pair as the promotable clone of
cluster/README.md. The clone's operations (timeouts, the monitor of each
role and its interval) are taken from the agent's own meta-data, so a
meta-data without a Promoted monitor, or without promote/demote/notify,
fails here. Fencing is sbd's (a stonith resource; crm_simulate fences by
itself). Promotion scores are the agent's (50 warm with both members, 20
warm with only the standby, 100 serving and protected, 60 serving alone),
set as the transient attribute the agent sets.

  cold start      both hosts start; the one with the higher score (A, 50
                  against 20) is promoted; the role monitors are the
                  meta-data's; nothing more to do afterwards
  node loss       A fails: A is fenced, then (and only then: the promote
                  depends on the fencing in the transition graph) B is
                  promoted
  failed promote  A's promote fails: A is demoted (its pair stood down)
                  before B is promoted; B ends promoted, A not
  both claiming   after a partition, A comes back with its pair still
                  serving while B serves (both promoted in their history):
                  exactly one is demoted, the one with the lower score, and
                  nothing is promoted or stopped on the other
"""
import copy
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

AGENT = sys.argv[1]
RSC, CLONE = "pair", "pair-clone"
NODES = {"hostA": "1", "hostB": "2"}
failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
        print("FAIL:", msg, file=sys.stderr)
    return cond


def meta_data():
    env = dict(os.environ, OCF_ROOT="/usr/lib/ocf")
    out = subprocess.run([AGENT, "meta-data"], capture_output=True, text=True, env=env, check=True).stdout
    return ET.fromstring(out)


def operations(md):
    """The clone's <op>s from the meta-data's <actions>: every action
    Pacemaker schedules, with its timeout; monitors with interval and role."""
    ops = ET.Element("operations")
    names = set()
    for i, a in enumerate(md.find("actions")):
        name = a.get("name")
        names.add(name)
        if name in ("meta-data", "validate-all"):
            continue
        op = ET.SubElement(ops, "op", id=f"{RSC}-{name}-{i}", name=name, timeout=a.get("timeout"),
                           interval=a.get("interval", "0s"))
        if a.get("role"):
            op.set("role", a.get("role"))
    for needed in ("start", "stop", "promote", "demote", "notify", "monitor"):
        check(needed in names, f"the agent's meta-data has no {needed} action")
    return ops


def node_state(uname, score):
    nid = NODES[uname]
    ns = ET.Element("node_state", id=nid, uname=uname, in_ccm="true", crmd="online", join="member",
                    expected="member")
    ta = ET.SubElement(ns, "transient_attributes", id=nid)
    ia = ET.SubElement(ta, "instance_attributes", id=f"status-{nid}")
    ET.SubElement(ia, "nvpair", id=f"status-{nid}-master-{RSC}", name=f"master-{RSC}", value=str(score))
    return ns


def base_cib(md):
    cib = ET.Element("cib", {"have-quorum": "1", "dc-uuid": "1", "validate-with": "pacemaker-3.8",
                             "epoch": "1", "num_updates": "0", "admin_epoch": "0"})
    conf = ET.SubElement(cib, "configuration")
    crm = ET.SubElement(ET.SubElement(conf, "crm_config"), "cluster_property_set", id="cib-bootstrap-options")
    for k, v in (("stonith-enabled", "true"), ("no-quorum-policy", "stop")):
        ET.SubElement(crm, "nvpair", id=f"opt-{k}", name=k, value=v)
    nodes = ET.SubElement(conf, "nodes")
    for uname, nid in NODES.items():
        ET.SubElement(nodes, "node", id=nid, uname=uname)
    res = ET.SubElement(conf, "resources")
    ET.SubElement(res, "primitive", {"id": "fence-sbd", "class": "stonith", "type": "fence_sbd"})
    clone = ET.SubElement(res, "clone", id=CLONE)
    meta = ET.SubElement(clone, "meta_attributes", id=f"{CLONE}-meta")
    # The recipe's meta attributes (cluster/README.md).
    for k, v in (("promotable", "true"), ("promoted-max", "1"), ("promoted-node-max", "1"),
                 ("clone-max", "2"), ("clone-node-max", "1"), ("notify", "true")):
        ET.SubElement(meta, "nvpair", id=f"{CLONE}-{k}", name=k, value=v)
    prim = ET.SubElement(clone, "primitive", id=RSC, provider="failoverd", type="pair")
    prim.set("class", "ocf")
    ia = ET.SubElement(prim, "instance_attributes", id=f"{RSC}-ia")
    for p in md.find("parameters"):
        if p.get("required") == "1":
            ET.SubElement(ia, "nvpair", id=f"{RSC}-ia-{p.get('name')}", name=p.get("name"), value="svc")
    prim.append(operations(md))
    ET.SubElement(conf, "constraints")
    status = ET.SubElement(cib, "status")
    status.append(node_state("hostA", 50))
    status.append(node_state("hostB", 20))
    return cib


class Sim:
    def __init__(self, tmp):
        self.tmp = tmp
        self.n = 0

    def run(self, cib_path, *args):
        """crm_simulate -S on cib_path; returns (actions, status, out path,
        graph root). actions: (action, node) of the resources' executed
        actions and fencings, in order."""
        self.n += 1
        out = os.path.join(self.tmp, f"out{self.n}.xml")
        graph = os.path.join(self.tmp, f"graph{self.n}.xml")
        r = subprocess.run(["crm_simulate", "-x", cib_path, "-S", "-O", out, "-G", graph, *args],
                           capture_output=True, text=True, timeout=60)
        if not check(r.returncode == 0, f"crm_simulate {' '.join(args)} exited {r.returncode}: {r.stderr}"):
            sys.exit(1)
        text = r.stdout
        executing = text.split("Executing Cluster Transition:")[1].split("Revised Cluster Status:")[0]
        revised = text.split("Revised Cluster Status:")[1]
        actions = []
        for line in executing.splitlines():
            m = re.match(rf"\s*\* Resource action: {RSC}(?::\d+)?\s+(\S+) on (\S+)$", line)
            if m:
                actions.append((m.group(1), m.group(2)))
            m = re.match(r"\s*\* Fencing (\S+) \((\w+)\)", line)
            if m:
                actions.append(("fence", m.group(1)))
        status = {}
        for role in ("Promoted", "Unpromoted", "Stopped"):
            m = re.search(rf"\* {role}: \[ ([^\]]*) \]", revised)
            status[role] = sorted(m.group(1).split()) if m else []
        return actions, status, out, ET.parse(graph).getroot(), text


def depends_on(graph, action_pred, input_pred):
    """True if the graph's action matching action_pred waits, directly or
    through others, for one matching input_pred."""
    by_id, inputs = {}, {}
    for syn in graph.findall("synapse"):
        for a in syn.find("action_set"):
            by_id[a.get("id")] = a
            inputs[a.get("id")] = [t.get("id") for trig in syn.find("inputs") for t in trig]
    targets = [i for i, a in by_id.items() if action_pred(a)]
    if not targets:
        return False
    seen, todo = set(), list(inputs.get(targets[0], []))
    while todo:
        i = todo.pop()
        if i in seen:
            continue
        seen.add(i)
        if i in by_id and input_pred(by_id[i]):
            return True
        todo.extend(inputs.get(i, []))
    return False


def rsc_op(op, node):
    return lambda a: a.tag == "rsc_op" and a.get("operation") == op and a.get("on_node") == node \
        and a.get("operation_key", "").startswith(RSC + "_")


def write(root, path):
    ET.ElementTree(root).write(path)
    return path


def set_score(root, uname, score):
    for ns in root.iter("node_state"):
        if ns.get("uname") == uname:
            for nv in ns.iter("nvpair"):
                if nv.get("name") == f"master-{RSC}":
                    nv.set("value", str(score))
                    return
            ta = ns.find("transient_attributes")
            if ta is None:
                ta = ET.SubElement(ns, "transient_attributes", id=NODES[uname])
            ia = ta.find("instance_attributes")
            if ia is None:
                ia = ET.SubElement(ta, "instance_attributes", id=f"status-{NODES[uname]}")
            ET.SubElement(ia, "nvpair", id=f"status-{NODES[uname]}-master-{RSC}", name=f"master-{RSC}",
                          value=str(score))


def main():
    md = meta_data()
    role_monitors = {a.get("role"): int(a.get("interval").rstrip("s")) * 1000
                     for a in md.find("actions") if a.get("name") == "monitor" and a.get("role")}
    check(set(role_monitors) == {"Promoted", "Unpromoted"}, f"monitors by role in the meta-data: {role_monitors}")
    mon_p, mon_u = (f"monitor={role_monitors.get(r)}" for r in ("Promoted", "Unpromoted"))
    with tempfile.TemporaryDirectory(prefix="fo-crm-simulate.") as tmp:
        sim = Sim(tmp)
        base = write(base_cib(md), os.path.join(tmp, "base.xml"))

        # Cold start.
        acts, st, steady, _, _ = sim.run(base)
        check(("promote", "hostA") in acts and ("promote", "hostB") not in acts,
              f"cold start: promote on hostA only: {acts}")
        check(("start", "hostA") in acts and ("start", "hostB") in acts, f"cold start: both started: {acts}")
        check(acts.index(("start", "hostA")) < acts.index(("promote", "hostA")), "cold start: start before promote")
        check((mon_p, "hostA") in acts and (mon_u, "hostB") in acts,
              f"cold start: the meta-data's role monitors ({mon_p} promoted, {mon_u} unpromoted): {acts}")
        check(any(a == "notify" for a, _ in acts), f"cold start: no notification (notify=true): {acts}")
        check(st["Promoted"] == ["hostA"] and st["Unpromoted"] == ["hostB"], f"cold start: {st}")
        acts, st, _, _, _ = sim.run(steady)
        check(acts == [] and st["Promoted"] == ["hostA"], f"steady state: nothing to do: {acts} {st}")
        print(f"cold start: hostA promoted, hostB unpromoted, monitors {mon_p} / {mon_u}")

        # Node loss: fenced first, then the other promoted.
        acts, st, lost, graph, _ = sim.run(steady, "--node-fail", "hostA")
        check(("fence", "hostA") in acts and ("promote", "hostB") in acts,
              f"node loss: hostA fenced, hostB promoted: {acts}")
        check(acts.index(("fence", "hostA")) < acts.index(("promote", "hostB")), f"node loss: order {acts}")
        check(depends_on(graph, rsc_op("promote", "hostB"),
                         lambda a: a.tag == "crm_event" and a.get("operation") == "stonith"
                         and a.get("on_node") == "hostA"),
              "node loss: hostB's promote does not wait for hostA's fencing in the transition graph")
        check(st["Promoted"] == ["hostB"], f"node loss: {st}")
        print("node loss: hostA fenced, then hostB promoted (the graph orders it)")

        # Failed promote.
        acts, st, failed, _, text = sim.run(base, "--op-fail", f"{RSC}_promote_0@hostA=1")
        check("FAILED Promoted hostA" in text, "failed promote: not shown failed")
        acts, st, _, graph, _ = sim.run(failed)
        check(("demote", "hostA") in acts and ("promote", "hostB") in acts,
              f"failed promote: hostA demoted, hostB promoted: {acts}")
        check(("promote", "hostA") not in acts, f"failed promote: hostA promoted again: {acts}")
        check(depends_on(graph, rsc_op("promote", "hostB"), rsc_op("demote", "hostA")),
              "failed promote: hostB's promote does not wait for hostA's demote")
        check(st["Promoted"] == ["hostB"] and "hostA" not in st["Promoted"], f"failed promote: {st}")
        print("failed promote on hostA: hostA demoted, then hostB promoted")

        # Both claiming: hostB took over while hostA was cut off; hostA comes
        # back with its own promoted history (still serving).
        a_promoted = [ns for ns in ET.parse(steady).getroot().iter("node_state") if ns.get("uname") == "hostA"][0]
        for loser, winner in (("hostA", "hostB"), ("hostB", "hostA")):
            root = ET.parse(lost).getroot()
            status = root.find("status")
            for ns in list(status):
                if ns.get("uname") == "hostA":
                    status.remove(ns)
            status.append(copy.deepcopy(a_promoted))
            set_score(root, loser, 60)
            set_score(root, winner, 100)
            both = write(root, os.path.join(tmp, f"both-{loser}.xml"))
            acts, st, _, _, text = sim.run(both)
            check("Promoted: [ hostA hostB ]" in text.split("Transition Summary")[0],
                  f"both claiming: the start state does not have both promoted:\n{text}")
            demotes = [n for a, n in acts if a == "demote"]
            check(demotes == [loser], f"both claiming ({winner} scores higher): demoted {demotes}, want [{loser}]")
            check(not any(a in ("promote", "stop") and n == winner for a, n in acts),
                  f"both claiming: {winner} was promoted or stopped again: {acts}")
            check(st["Promoted"] == [winner], f"both claiming: {st}")
        print("both claiming: the host with the lower score demoted, the other left serving (both ways)")

    if failures:
        print(f"test_crm_simulate: {len(failures)} failed", file=sys.stderr)
        sys.exit(1)
    print("test_crm_simulate: ok")


main()
