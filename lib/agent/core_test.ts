import assert from "node:assert/strict";
import { AgentCore, type AgentCoreConfig } from "./core.ts";
import { markFor } from "../config.ts";
import type { AddressClash, Claim, Conflict } from "../rules/conflicts.ts";
import { AttachmentRefusedError } from "../cni/protocol.ts";
import type { Pod } from "../pods/pod.ts";
import type { PodSink, PodSource } from "../pods/source.ts";
import { keyId, type ProbeEntry } from "../datapath/probe_map.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import type { NetworkMismatch, PodNetwork } from "../rules/pod_network.ts";
import type { Skip } from "../rules/targets.ts";
import type { NodeNetworkStore } from "./node_networks.ts";
import type { Unwritten } from "../rules/share.ts";
import type { PodAt, SharedAddress } from "../rules/address_holders.ts";
import { ATTACH_LOOKUP_MS } from "./attachment_network.ts";
import type { PodLookup } from "../pods/source.ts";

const CONFIG: AgentCoreConfig = {
  nodeName: "n1",
  networkAnnotation: "lace.io/network",
  networkIdAnnotation: "lace.io/network-id",
  probeMark: 0x1000,
  markShift: 16,
  debounceMs: 5,
  resyncMs: 60_000,
  addressConflict: "fail-closed",
  addressSharing: "exclusive",
  maxTargetsPerPod: 64,
};

/** The CNI path's word for pod "a": the node attached it to network 1 at 10.0.0.8. */
const ATTACHED_TO_NET1 = {
  namespace: "ns",
  name: "p-a",
  uid: "a",
  ips: ["10.0.0.8"],
  network: "net1",
  networkId: 1,
};

class FakeSource implements PodSource {
  sink: PodSink | undefined;
  stopped = false;
  constructor(readonly name: string) {}
  start(sink: PodSink): Promise<void> {
    this.sink = sink;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
  list(...pods: Pod[]): void {
    this.sink!.replaceAll(this.name, pods);
  }
}

function pod(
  uid: string,
  ip: string | undefined,
  networkId: number | undefined,
  created = "2026-01-01T00:00:00Z",
  port: number | string = 8080,
): Pod {
  return {
    metadata: {
      name: `p-${uid}`,
      namespace: "ns",
      uid,
      creationTimestamp: created,
      annotations: networkId
        ? { "lace.io/network": `net${networkId}`, "lace.io/network-id": String(networkId) }
        : undefined,
    },
    spec: {
      nodeName: "n1",
      containers: [{ name: "app", readinessProbe: { httpGet: { port, path: "/ready" } } }],
    },
    status: { phase: "Running", ...(ip ? { podIPs: [{ ip }] } : {}) },
  };
}

function entry(address: string, port: number, networkId: number): ProbeEntry {
  return {
    key: { family: "ipv4", address, port },
    value: { networkId, mark: markFor(CONFIG, networkId) },
  };
}

function ids(store: MemoryProbeStore): string[] {
  return store.entries().map((e) => `${keyId(e.key)}=${e.value.networkId}`).sort();
}

function setup(
  sourceNames = ["api"],
  config: Partial<AgentCoreConfig> = {},
  store = new MemoryProbeStore(),
  podLookup?: PodLookup,
) {
  const { clock, timers } = fakeTime();
  const sources = sourceNames.map((n) => new FakeSource(n));
  const skips: Skip[] = [];
  const conflicts: [Conflict, Claim][] = [];
  const refusals: AddressClash[][] = [];
  const unwritten: Unwritten[] = [];
  const clashes: [SharedAddress, PodAt][] = [];
  const core = new AgentCore({
    config: { ...CONFIG, ...config },
    store,
    sources,
    onSkip: (s) => skips.push(s),
    onConflict: (c, dropped) => conflicts.push([c, dropped]),
    onAttachRefused: (_a, clashes) => refusals.push(clashes),
    onUnwritten: (u) => unwritten.push(u),
    onAddressClash: (a, p) => clashes.push([a, p]),
    timers,
    ...(podLookup ? { podLookup } : {}),
  });
  const settle = async (ms = CONFIG.debounceMs) => {
    await clock.tickAsync(ms);
    await core.runner.idle();
  };
  return {
    clock,
    timers,
    store,
    sources,
    core,
    skips,
    conflicts,
    refusals,
    unwritten,
    clashes,
    settle,
  };
}

Deno.test("AgentCore deletes nothing before every source's first full list", async () => {
  const t = setup(["api", "dir"]);
  t.store.put(entry("10.0.0.99", 80, 3)); // left by the previous agent
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.99:80=3"]);
  assert.equal(t.core.view().firstFullListApplied, false);
  t.sources[1].list();
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.equal(t.core.view().firstFullListApplied, true);
  await t.core.stop();
});

Deno.test("AgentCore writes the mark for the pod's network", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 7));
  await t.settle();
  assert.deepEqual(t.store.entries(), [entry("10.0.0.1", 8080, 7)]);
  assert.equal(t.store.entries()[0].value.mark, 0x71000);
  await t.core.stop();
});

Deno.test("AgentCore resync repairs entries deleted or changed behind its back", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1), pod("b", "10.0.0.2", 2));
  await t.settle();
  t.store.remove(entry("10.0.0.1", 8080, 1).key);
  t.store.put(entry("10.0.0.2", 8080, 9));
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.2:8080=2"]);
  await t.core.stop();
});

Deno.test("AgentCore under older-wins keeps the older pod on a conflict, stably, and reports it once", async () => {
  const t = setup(["api"], { addressConflict: "older-wins" });
  await t.core.start();
  const older = pod("z-old", "10.0.0.5", 1, "2026-01-01T00:00:00Z");
  const newer = pod("a-new", "10.0.0.5", 2, "2026-01-02T00:00:00Z");
  t.sources[0].list(newer, older);
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1"]);
  t.sources[0].list(older, newer);
  t.sources[0].sink!.upsert("api", {
    ...newer,
    metadata: { ...newer.metadata, resourceVersion: "2" },
  });
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1"]);
  assert.equal(t.conflicts.length, 1);
  assert.equal(t.conflicts[0][1].pod.uid, "a-new");
  assert.equal(t.core.view().conflicts.length, 1);
  await t.core.stop();
});

Deno.test("AgentCore tags a key claimed by two networks for neither, and reports both pods once", async () => {
  const t = setup();
  await t.core.start();
  const older = pod("z-old", "10.0.0.5", 1, "2026-01-01T00:00:00Z");
  const newer = pod("a-new", "10.0.0.5", 2, "2026-01-02T00:00:00Z");
  t.sources[0].list(older, pod("other", "10.0.0.6", 2));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1", "10.0.0.6:8080=2"]);
  t.sources[0].list(older, newer, pod("other", "10.0.0.6", 2));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.6:8080=2"], "the older pod's entry is removed too");
  assert.deepEqual(t.conflicts.map(([, d]) => d.pod.uid).sort(), ["a-new", "z-old"]);
  assert.equal(t.conflicts[0][0].policy, "fail-closed");
  await t.core.stop();
});

Deno.test("AgentCore withdraws a conflicted key left by a previous agent before the first full list", async () => {
  const t = setup(["api", "dir"]);
  t.store.put(entry("10.0.0.5", 8080, 1)); // an older agent gave it to network 1
  t.store.put(entry("10.0.0.99", 80, 3)); // stale, but deletes wait for the full list
  await t.core.start();
  t.sources[0].list(
    pod("a", "10.0.0.5", 1, "2026-01-01T00:00:00Z"),
    pod("b", "10.0.0.5", 2, "2026-01-02T00:00:00Z"),
  );
  await t.settle();
  assert.equal(t.core.view().synced, false);
  assert.deepEqual(ids(t.store), ["10.0.0.99:80=3"]);
  await t.core.stop();
});

Deno.test("AgentCore counts a default-network pod's probe as a claim in conflicts", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("plain", "10.0.0.5", undefined), pod("lace", "10.0.0.5", 2));
  await t.settle();
  assert.deepEqual(ids(t.store), [], "no entry would send the plain pod's probes into network 2");
  assert.deepEqual(t.conflicts.map(([, d]) => [d.pod.uid, d.networkId]).sort(), [
    ["lace", 2],
    ["plain", 0],
  ]);
  await t.core.stop();
});

Deno.test("AgentCore refuses an attachment whose address a pod of another network holds", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 2), pod("new", undefined, undefined));
  await t.settle();
  const attach = (uid: string, networkId?: number) =>
    t.core.registerAttachment({
      namespace: "ns",
      name: `p-${uid}`,
      uid,
      ips: ["10.0.0.5"],
      ...(networkId ? { network: `net${networkId}`, networkId } : {}),
    });
  await assert.rejects(attach("new", 1), (e: Error) => {
    assert.ok(e instanceof AttachmentRefusedError);
    assert.match(e.message, /Address 10\.0\.0\.5 is already used on this node/);
    return true;
  });
  assert.deepEqual(t.refusals.map((r) => r.map((c) => c.holder.uid)), [["holder"]]);
  assert.equal(t.core.cache.get("new")?.status?.podIPs, undefined, "nothing registered");
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=2"]);
  // The same network, or an ADD that does not say its network: no refusal.
  await attach("new", 2);
  await t.core.removeAttachment("new");
  await attach("new");
  assert.equal(t.refusals.length, 1);
  await t.core.stop();
});

Deno.test("AgentCore reports a pod's problem once while it persists", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1, undefined, "nope"));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(t.skips.map((s) => s.reason), ["named-port"]);
  t.sources[0].list();
  await t.settle();
  t.sources[0].list(pod("a", "10.0.0.1", 1, undefined, "nope"));
  await t.settle();
  assert.equal(t.skips.length, 2, "reported again after it went away and came back");
  await t.core.stop();
});

Deno.test("AgentCore.view() describes each target's pod and probe", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 4));
  await t.settle();
  const snap = t.core.view();
  assert.equal(snap.synced, true);
  assert.deepEqual(snap.counts, { pods: 1, targets: 1, conflicts: 0, skips: 0, mismatches: 0 });
  const [view] = snap.targets;
  assert.deepEqual(view.entry, entry("10.0.0.1", 8080, 4));
  assert.equal(`${view.pod.namespace}/${view.pod.name}`, "ns/p-a");
  assert.equal(view.container, "app");
  assert.equal(view.probe, "readiness");
  assert.equal(view.http?.path, "/ready");
  assert.equal(view.network, "net4");
  await t.core.stop();
});

Deno.test("AgentCore.view() shares the current state without a copy; a reconcile replaces it", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 4));
  await t.settle();
  const view = t.core.view();
  assert.equal(t.core.view().targets, view.targets, "no copy per call");
  t.sources[0].list(pod("a", "10.0.0.2", 4));
  await t.settle();
  assert.equal(t.core.view().targets[0].entry.key.address, "10.0.0.2");
  assert.equal(view.targets[0].entry.key.address, "10.0.0.1", "an earlier view is never changed");
  await t.core.stop();
});

Deno.test("AgentCore.registerAttachment() resolves once the pod's targets are in the store", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined)); // the API has no IP nor network yet
  await t.settle();
  assert.deepEqual(ids(t.store), []);
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-a",
    uid: "a",
    ips: ["10.0.0.8"],
    network: "red",
    networkId: 5,
  });
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=5"]);
  await t.core.removeAttachment("a");
  assert.deepEqual(ids(t.store), []);
  await t.core.stop();
});

Deno.test("AgentCore.stop() stops the sources and leaves the store in place", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  await t.core.stop();
  assert.equal(t.sources[0].stopped, true);
  t.sources[0].list();
  await t.settle(CONFIG.resyncMs * 2);
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.equal(t.clock.countTimers(), 0);
});

/** A pod whose spec carries an object nested `depth` levels deep. */
function deeplyNested(uid: string, depth: number): Pod {
  const hostile = pod(uid, "10.0.0.66", 1);
  let inner: Record<string, unknown> = {};
  const root = inner;
  for (let i = 0; i < depth; i++) inner = (inner.x = {}) as Record<string, unknown>;
  (hostile.spec as Record<string, unknown>).extra = root;
  return hostile;
}

Deno.test("AgentCore skips a pod nested thousands of levels deep and writes the others' targets", async () => {
  const t = setup(["api", "dir"]);
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1), deeplyNested("hostile", 20_000));
  t.sources[1].list(pod("z", "10.0.0.2", 2), deeplyNested("hostile", 20_000));
  await t.settle();
  const report = t.core.view().lastReconcile!;
  assert.equal(report.error, undefined, "the reconcile as a whole succeeds");
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "10.0.0.2:8080=2"]);
  const skip = t.skips.find((s) => s.pod.uid === "hostile");
  assert.ok(skip, "the hostile pod is reported");
  assert.equal(skip.reason, "malformed");
  assert.equal(`${skip.pod.namespace}/${skip.pod.name}`, "ns/p-hostile");
  assert.match(skip.message, /could not be evaluated/);
  assert.equal(t.core.view().firstFullListApplied, true);
  await t.core.stop();
});

Deno.test("AgentCore never makes a target of a loopback or link-local address the CNI path reports", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined));
  await t.settle();
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-a",
    uid: "a",
    ips: ["127.0.0.1", "169.254.169.254", "fe80::1"],
    network: "red",
    networkId: 5,
  });
  assert.deepEqual(ids(t.store), []);
  assert.deepEqual(t.skips.map((s) => s.reason), Array(3).fill("special-address"));
  await t.core.stop();
});

Deno.test("AgentCore tags a pod with the network its CNI attach reported, not its annotation", async () => {
  const t = setup();
  const mismatches: NetworkMismatch[] = [];
  const core = new AgentCore({
    config: CONFIG,
    store: t.store,
    sources: t.sources,
    onNetworkMismatch: (m) => mismatches.push(m),
    timers: t.timers,
  });
  await core.start();
  // The pod's author claims network 2; the node attached the pod to network 1.
  t.sources[0].list(pod("a", "10.0.0.8", 2));
  await t.clock.tickAsync(CONFIG.debounceMs);
  await core.runner.idle();
  await core.registerAttachment(ATTACHED_TO_NET1);
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  assert.equal(mismatches.length, 1);
  assert.equal(mismatches[0].annotated, 'network "net2" (id 2)');
  assert.deepEqual(mismatches[0].node, { network: "net1", networkId: 1 });
  assert.equal(core.view().counts.mismatches, 1);
  // A later change of the annotation does not move the pod either, and is reported once.
  t.sources[0].list(pod("a", "10.0.0.8", 3));
  await core.reconcileNow();
  await core.reconcileNow();
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  assert.equal(mismatches.length, 2);
  // Once the attachment is gone, the annotation is all the agent has.
  await core.removeAttachment("a");
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=3"]);
  await core.stop();
});

/** A pod in network `networkId` at `ip` with one TCP readiness probe per port, in this order. */
function podWithPorts(uid: string, ip: string, networkId: number, ports: number[]): Pod {
  const p = pod(uid, ip, networkId);
  p.spec.containers = ports.map((port, i) => ({
    name: `c${i}`,
    readinessProbe: { tcpSocket: { port } },
  }));
  return p;
}

Deno.test("AgentCore writes a pod's first targets up to the per-pod cap and reports the rest", async () => {
  const t = setup(["api"], { maxTargetsPerPod: 2 });
  await t.core.start();
  t.sources[0].list(podWithPorts("big", "10.0.0.1", 1, [9003, 9001, 9002]));
  await t.settle();
  await t.settle(CONFIG.resyncMs);
  assert.deepEqual(ids(t.store), ["10.0.0.1:9001=1", "10.0.0.1:9003=1"], "spec order, not key");
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count, u.wanted]), [
    ["big", "cap", 1, 3],
  ]);
  assert.deepEqual(t.core.view().unwritten.map((u) => u.reason), ["cap"]);
  await t.core.stop();
});

Deno.test("AgentCore shares a small map fairly: a flooding pod is trimmed, the others are written", async () => {
  const t = setup(["api"], {}, new MemoryProbeStore({ capacity: 10 }));
  await t.core.start();
  const flood = Array.from({ length: 30 }, (_, i) => 20000 + i);
  t.sources[0].list(
    podWithPorts("flood", "10.0.0.9", 3, flood),
    podWithPorts("a", "10.0.0.1", 1, [80, 81]),
    podWithPorts("b", "10.0.0.2", 2, [80]),
  );
  await t.settle();
  const written = ids(t.store);
  assert.equal(written.length, 10);
  for (const want of ["10.0.0.1:80=1", "10.0.0.1:81=1", "10.0.0.2:80=2"]) {
    assert.ok(written.includes(want), `${want} in ${written}`);
  }
  assert.equal(t.core.view().lastReconcile!.ops.every((o) => o.ok), true, "no write fails");
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [
    ["flood", "map-full", 23],
  ]);
  await t.core.stop();
});

Deno.test("AgentCore reports the pods whose writes a full map refused, once while it lasts", async () => {
  const store = new MemoryProbeStore({ capacity: 2 });
  store.put(entry("10.0.0.98", 1, 3)); // a previous agent's entries fill the map;
  store.put(entry("10.0.0.99", 1, 3)); // deletes wait for every source's full list
  const t = setup(["api", "dir"], {}, store);
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.1", 1));
  await t.settle();
  await t.settle(600); // the retry
  assert.deepEqual(t.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [["a", "map-full", 1]]);
  assert.deepEqual(t.core.view().unwritten.map((u) => u.reason), ["map-full"]);
  // The full list frees the stale entries; removes go first, so the put fits at once.
  t.sources[1].list();
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1"]);
  assert.deepEqual(t.core.view().unwritten, []);
  await t.core.stop();
});

Deno.test("AgentCore restarted with the same store keeps the node's network over the annotation", async () => {
  const saved = new Map<string, PodNetwork>();
  const store: NodeNetworkStore = {
    load: () => new Map(saved),
    save: (networks) => {
      saved.clear();
      for (const [uid, net] of networks) saved.set(uid, net);
    },
  };
  const withStore = (probes: MemoryProbeStore, sources: PodSource[]) =>
    new AgentCore({ config: CONFIG, store: probes, sources, nodeNetworkStore: store });
  const before = withStore(new MemoryProbeStore(), []);
  await before.registerAttachment(ATTACHED_TO_NET1);
  await before.stop();
  assert.deepEqual([...saved], [["a", { network: "net1", networkId: 1 }]]);
  // The restarted agent knows the pod from the API only, annotated with network 2.
  const t = setup();
  const after = withStore(t.store, t.sources);
  await after.start();
  t.sources[0].list(pod("a", "10.0.0.8", 2), pod("b", "10.0.0.9", 3));
  await after.reconcileNow();
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1", "10.0.0.9:8080=3"]);
  // A pod gone from every source is forgotten.
  t.sources[0].list(pod("b", "10.0.0.9", 3));
  await after.reconcileNow();
  assert.deepEqual([...saved], []);
  await after.stop();
});

Deno.test("AgentCore: a DEL of one of a pod's two interfaces keeps the other interface's targets", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined));
  await t.settle();
  const eth0 = { containerId: "sandbox1", ifname: "eth0" };
  const net1 = { containerId: "sandbox1", ifname: "net1" };
  const attach = (ips: string[], ref: typeof eth0) =>
    t.core.registerAttachment({ ...ATTACHED_TO_NET1, ips }, ref);
  await attach(["10.0.0.8"], eth0);
  await attach(["192.168.5.8"], net1);
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1", "192.168.5.8:8080=1"].sort());
  await t.core.removeAttachment("a", net1);
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"], "eth0's target stays");
  await t.core.removeAttachment("a", eth0);
  assert.deepEqual(ids(t.store), []);
  await t.core.stop();
});

Deno.test("AgentCore: a new sandbox's ADD replaces the interfaces of the pod's old sandbox", async () => {
  const t = setup();
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined));
  await t.settle();
  const attach = (ips: string[], containerId: string, ifname: string) =>
    t.core.registerAttachment({ ...ATTACHED_TO_NET1, ips }, {
      containerId,
      ifname,
    });
  await attach(["10.0.0.8"], "old", "eth0");
  await attach(["192.168.5.8"], "old", "net1");
  await attach(["10.0.0.9"], "new", "eth0");
  assert.deepEqual(ids(t.store), ["10.0.0.9:8080=1"]);
  await t.core.stop();
});

/** A pod lookup answering from `pods` by namespace/name, counting its calls. */
function lookupOf(...pods: Pod[]): PodLookup & { calls: number } {
  const lookup = {
    calls: 0,
    get(namespace: string, name: string) {
      lookup.calls++;
      return Promise.resolve(
        pods.find((p) => p.metadata.namespace === namespace && p.metadata.name === name),
      );
    },
  };
  return lookup;
}

/** An ADD of pod `uid` at 10.0.0.5 whose conf names no network. */
function unnamedAttach(core: AgentCore, uid: string) {
  return core.registerAttachment({ namespace: "ns", name: `p-${uid}`, uid, ips: ["10.0.0.5"] });
}

Deno.test("AgentCore refuses an ADD naming no network when the cached annotations put the pod in another network than the address's holder", async () => {
  const lookup = lookupOf();
  const t = setup(["api"], {}, undefined, lookup);
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 2), pod("new", undefined, 1));
  await t.settle();
  await assert.rejects(unnamedAttach(t.core, "new"), AttachmentRefusedError);
  assert.equal(lookup.calls, 0, "the cache named the network: no API call");
  assert.deepEqual(t.refusals.map((r) => r.map((c) => c.holder.uid)), [["holder"]]);
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=2"]);
  await t.core.stop();
});

Deno.test("AgentCore reads the pod from the API when the cache has no network annotations for it, and refuses a clash", async () => {
  // The watch has not delivered the pod, or delivered it before the network plugin annotated it.
  for (const cached of [undefined, pod("new", undefined, undefined)]) {
    for (const [apiNetwork, refused] of [[1, true], [undefined, true], [2, false]] as const) {
      const lookup = lookupOf(pod("new", undefined, apiNetwork));
      const t = setup(["api"], {}, undefined, lookup);
      await t.core.start();
      t.sources[0].list(pod("holder", "10.0.0.5", 2), ...(cached ? [cached] : []));
      await t.settle();
      const add = unnamedAttach(t.core, "new");
      const what = `cached ${!!cached}, API network ${apiNetwork ?? "default"}`;
      if (refused) await assert.rejects(add, AttachmentRefusedError, what);
      else await add;
      assert.equal(lookup.calls, 1, what);
      await t.core.stop();
    }
  }
});

Deno.test("AgentCore does not refuse an ADD whose pod the API names under another uid", async () => {
  const other = pod("new", undefined, 1);
  other.metadata.uid = "someone-else";
  const t = setup(["api"], {}, undefined, lookupOf(other));
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 2));
  await t.settle();
  await unnamedAttach(t.core, "new");
  assert.equal(t.refusals.length, 0);
  await t.core.stop();
});

Deno.test("AgentCore fails open when the API lookup misses its deadline, then tags none of the later pod's probes at the held address", async () => {
  let calls = 0;
  const hanging: PodLookup = {
    get: () => {
      calls++;
      return new Promise(() => {});
    },
  };
  const t = setup(["api"], {}, undefined, hanging);
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 2, "2026-01-01T00:00:00Z", 9090));
  await t.settle();
  let settled = false;
  const add = unnamedAttach(t.core, "late").finally(() => settled = true);
  await t.clock.tickAsync(ATTACH_LOOKUP_MS - 1);
  assert.equal(settled, false, "the ADD waits for the API up to its deadline");
  await t.clock.tickAsync(1);
  await add;
  assert.equal(calls, 1);
  assert.equal(t.refusals.length, 0, "fail open");
  // The watch then delivers the pod, annotated with network 1 by the trusted writer.
  t.sources[0].list(
    pod("holder", "10.0.0.5", 2, "2026-01-01T00:00:00Z", 9090),
    pod("late", "10.0.0.5", 1, "2026-01-02T00:00:00Z", 8080),
  );
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:9090=2"], "the holder keeps its own");
  assert.deepEqual(t.clashes.map(([a, p]) => [a.address, p.pod.uid]), [["10.0.0.5", "late"]]);
  assert.deepEqual(t.core.view().sharedAddresses.map((a) => a.holder.pod.uid), ["holder"]);
  await t.settle(CONFIG.resyncMs);
  assert.equal(t.clashes.length, 1, "reported once while it lasts");
  await t.core.stop();
});

Deno.test("AgentCore restarted learns the same holder of an address whatever order its sources list the pods in", async () => {
  const holder = pod("v", "10.0.0.5", 2, "2026-01-02T00:00:00Z", 9090);
  const later = pod("a", "10.0.0.5", 1, "2026-01-03T00:00:00Z", 8080);
  const first = setup();
  await first.core.start();
  first.sources[0].list(holder);
  await first.settle();
  first.sources[0].list(holder, later);
  await first.settle();
  await first.core.stop();
  // The restart lists the later pod first and alone, then both: the map ends the same.
  const again = setup(["api", "dir"], {}, first.store);
  await again.core.start();
  again.sources[1].list(later);
  again.sources[0].list(later, holder);
  await again.settle();
  assert.deepEqual(ids(again.store), ids(first.store));
  assert.deepEqual(ids(again.store), ["10.0.0.5:9090=2"]);
  await again.core.stop();
});

Deno.test("AgentCore under shared neither refuses an ADD nor untags a pod at another network's address", async () => {
  const t = setup(["api"], { addressSharing: "shared" }, undefined, lookupOf());
  await t.core.start();
  t.sources[0].list(
    pod("holder", "10.0.0.5", 2, "2026-01-01T00:00:00Z", 9090),
    pod("new", undefined, 1, "2026-01-02T00:00:00Z", 8080),
  );
  await t.settle();
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-new",
    uid: "new",
    ips: ["10.0.0.5"],
    network: "net1",
    networkId: 1,
  });
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=1", "10.0.0.5:9090=2"]);
  assert.equal(t.refusals.length + t.clashes.length, 0);
  assert.equal(t.core.view().sharedAddresses.length, 1, "counted");
  await t.core.stop();
});
