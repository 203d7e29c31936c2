/**
 * The agent core with what the CNI path reports: the node's network over the annotation (kept
 * across restarts), a pod's interfaces and sandboxes, and addresses that are never targets.
 */
import assert from "node:assert/strict";
import { AgentCore } from "./core.ts";
import { HOST_ADDRESS_CHECK_MS } from "./host/address_watch.ts";
import { AttachmentRefusedError } from "../cni/protocol.ts";
import type { PodSource } from "../pods/source.ts";
import { MemoryProbeStore } from "../../tests/helpers/memory_probe_store.ts";
import type { NetworkMismatch, PodNetwork } from "../rules/pod_network.ts";
import type { NodeNetworkStore } from "./admission/node_networks.ts";
import { ATTACHED_TO_NET1, CONFIG, ids, pod, setup } from "../../tests/helpers/core_world.ts";

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

Deno.test("AgentCore takes a pod's network from its eth0 alone: another interface naming another Lace network, or one when eth0 named none, is refused", async () => {
  const t = setup(["api"], { addressSharing: "shared" });
  await t.core.start();
  t.sources[0].list(pod("a", undefined, undefined), pod("b", undefined, 1));
  await t.settle();
  const attach = (uid: string, containerId: string, ifname: string, ip: string, id?: number) =>
    t.core.registerAttachment(
      {
        namespace: "ns",
        name: `p-${uid}`,
        uid,
        ips: [ip],
        ...(id ? { network: `net${id}`, networkId: id } : {}),
      },
      { containerId, ifname },
    );
  await attach("a", "s1", "eth0", "10.0.0.8", 1);
  // Multus attaching what the pod's own annotation asks for: its probes would go into network 2.
  await assert.rejects(attach("a", "s1", "net1", "10.9.0.9", 2), AttachmentRefusedError);
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  // The same network on another interface, eth0 again, or a new sandbox's eth0: attached.
  await attach("a", "s1", "net1", "10.9.0.9", 1);
  await attach("a", "s1", "eth0", "10.0.0.8", 1);
  await attach("a", "s2", "eth0", "10.0.0.7", 2);
  assert.deepEqual(ids(t.store), ["10.0.0.7:8080=2"]);
  await assert.rejects(attach("a", "s2", "net1", "10.9.0.9", 1), AttachmentRefusedError);
  // Pod b's eth0 names no network (its annotations tell it): no other interface may name one.
  await attach("b", "s3", "eth0", "10.0.0.6");
  await assert.rejects(attach("b", "s3", "net1", "10.9.0.8", 2), /names a Lace network other/);
  await assert.rejects(attach("b", "s3", "net1", "10.9.0.8", 1), AttachmentRefusedError);
  assert.deepEqual(ids(t.store), ["10.0.0.6:8080=1", "10.0.0.7:8080=2"]);
  await t.core.stop();
});

/** The ADD of pod "new" in network 1 at fd00::9 and `ip`. */
function attachNew(core: AgentCore, ip: string): Promise<void> {
  return core.registerAttachment({
    namespace: "ns",
    name: "p-new",
    uid: "new",
    ips: ["fd00::9", ip],
    network: "net1",
    networkId: 1,
  });
}

Deno.test("AgentCore refuses an ADD bringing one of the node's own addresses under both sharing modes, reads them at each ADD, and says so once per refusal", async () => {
  for (const addressSharing of ["exclusive", "shared"] as const) {
    const host = new Set(["10.0.0.1"]);
    const refused: [string, string][] = [];
    const t = setup(["api"], { addressSharing }, undefined, undefined, {
      hostAddresses: () => host,
      onHostAddressRefused: (a, address) => refused.push([a.uid, address]),
    });
    await t.core.start();
    t.sources[0].list(pod("new", undefined, 1));
    await t.settle();
    const attach = (ip: string) => attachNew(t.core, ip);
    await assert.rejects(attach("10.0.0.1"), (e: Error) => {
      assert.ok(e instanceof AttachmentRefusedError, addressSharing);
      assert.match(e.message, /Address 10\.0\.0\.1 is one of this node's own addresses/);
      return true;
    });
    assert.deepEqual(refused, [["new", "10.0.0.1"]], addressSharing);
    assert.deepEqual(ids(t.store), [], "nothing registered");
    // The node's addresses change: read again at the next ADD.
    host.clear();
    await attach("10.0.0.1");
    assert.deepEqual(ids(t.store), ["10.0.0.1:8080=1", "[fd00::9]:8080=1"], addressSharing);
    assert.equal(refused.length, 1);
    await t.core.stop();
  }
});

Deno.test("AgentCore with pod ranges refuses an ADD bringing an address outside them under both sharing modes, and tags no probe of a pod learnt there", async () => {
  for (const addressSharing of ["exclusive", "shared"] as const) {
    const refused: [string, string][] = [];
    const t = setup(
      ["api"],
      { addressSharing, podCidrs: ["10.0.0.0/24", "fd00::/64"] },
      undefined,
      undefined,
      {
        onOutsidePodRangesRefused: (a, address) => refused.push([a.uid, address]),
      },
    );
    await t.core.start();
    // Learnt from a source at the API server's address (outside the ranges): no target there. A
    // pod of the default network (not Lace's, nor its ranges) has none to lose: not reported.
    t.sources[0].list(
      pod("api-squatter", "192.168.1.10", 2),
      pod("new", undefined, 1),
      pod("plain", "192.168.7.7", undefined),
    );
    await t.settle();
    assert.deepEqual(ids(t.store), [], addressSharing);
    assert.deepEqual(t.skips.map((s) => `${s.pod.uid} ${s.reason}`), [
      "api-squatter outside-pod-ranges",
    ]);
    assert.match(t.skips[0].message, /Pod IP 192\.168\.1\.10 is outside every pod range/);
    assert.deepEqual(t.core.view().outsidePodRanges.map((h) => `${h.pod.uid} ${h.address}`), [
      "api-squatter 192.168.1.10",
    ]);
    const attach = (ip: string) => attachNew(t.core, ip);
    await assert.rejects(attach("::ffff:192.168.1.10"), (e: Error) => {
      assert.ok(e instanceof AttachmentRefusedError, addressSharing);
      assert.match(e.message, /Address 192\.168\.1\.10 is outside every pod range/);
      return true;
    });
    assert.deepEqual(refused, [["new", "192.168.1.10"]], addressSharing);
    assert.deepEqual(ids(t.store), [], "nothing registered");
    await attach("10.0.0.9");
    assert.deepEqual(ids(t.store), ["10.0.0.9:8080=1", "[fd00::9]:8080=1"], addressSharing);
    // A pod of the default network (no network in its conf or annotations): its own ranges.
    await t.core.registerAttachment({
      namespace: "ns",
      name: "p-plain",
      uid: "plain",
      ips: ["192.168.7.7"],
    });
    assert.equal(refused.length, 1);
    await t.core.stop();
  }
});

Deno.test("AgentCore without pod ranges takes a pod's address wherever it is", async () => {
  const t = setup(["api"]);
  await t.core.start();
  t.sources[0].list(pod("a", "192.168.1.10", 2));
  await t.settle();
  assert.deepEqual(ids(t.store), ["192.168.1.10:8080=2"]);
  assert.deepEqual(t.core.view().outsidePodRanges, []);
  await t.core.stop();
});

Deno.test("AgentCore reads the node's own addresses once per CNI ADD, the reconcile it runs included", async () => {
  let reads = 0;
  const t = setup(["api"], {}, undefined, undefined, {
    hostAddresses: () => {
      reads++;
      return new Set(["10.0.0.1"]);
    },
  });
  await t.core.start();
  t.sources[0].list(pod("new", undefined, 1));
  await t.settle();
  reads = 0;
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-new",
    uid: "new",
    ips: ["10.0.0.9"],
    network: "net1",
    networkId: 1,
  });
  assert.deepEqual(ids(t.store), ["10.0.0.9:8080=1"]);
  assert.equal(reads, 1);
  // A reconcile of its own reads them again.
  await t.core.reconcileNow();
  assert.equal(reads, 2);
  await t.core.stop();
});

Deno.test("AgentCore takes a learnt pod's targets at an address the node gains within its check of the node's addresses, not at the resync, and gives them back when the node drops it", async () => {
  const host = new Set(["10.0.0.1"]);
  let freshReads = 0;
  const t = setup(["api"], {}, undefined, undefined, {
    hostAddresses: (o) => {
      if (o?.fresh) freshReads++;
      return host;
    },
  });
  await t.core.start();
  t.sources[0].list(pod("a", "10.0.0.8", 1));
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  // The node gains the pod's address (resync is CONFIG's 60 s away): held within the check.
  host.add("10.0.0.8");
  await t.settle(HOST_ADDRESS_CHECK_MS + CONFIG.debounceMs);
  assert.deepEqual(ids(t.store), []);
  assert.deepEqual(t.core.view().hostHeld.map((h) => [h.pod.uid, h.address]), [["a", "10.0.0.8"]]);
  assert.deepEqual(t.skips.map((s) => s.reason), ["host-address"], "one ProbeIgnored");
  // Past the reader's cache: a reconcile's read less than its TTL before would answer otherwise.
  assert.equal(freshReads, 1);
  // Unchanged: no reconcile of its own, and no second skip.
  const runs = t.core.view().lastReconcile;
  await t.settle(3 * HOST_ADDRESS_CHECK_MS);
  assert.equal(t.core.view().lastReconcile, runs);
  // Dropped again: released within the check.
  host.delete("10.0.0.8");
  await t.settle(HOST_ADDRESS_CHECK_MS + CONFIG.debounceMs);
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  assert.deepEqual(t.core.view().hostHeld, []);
  assert.equal(t.skips.length, 1);
  await t.core.stop();
});
