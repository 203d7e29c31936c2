/**
 * The agent core with one address held by pods of two networks: CNI ADDs refused, the API asked
 * for a pod's network, the holder kept across restarts, and address sharing.
 */
import assert from "node:assert/strict";
import type { AgentCore } from "./core.ts";
import { AttachmentRefusedError } from "../cni/protocol.ts";
import { normalisePod, type Pod } from "../pods/pod.ts";
import type { PodLookup } from "../pods/source.ts";
import { ATTACH_LOOKUP_MS } from "./admission/network.ts";
import { CONFIG, ids, pod, setup } from "../../tests/helpers/core_world.ts";

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
  // The same network: no refusal. An ADD whose network nothing tells (no conf network, no
  // annotations, no API to ask) may be another network's: refused there too.
  await attach("new", 2);
  await t.core.removeAttachment("new");
  await assert.rejects(attach("new"), /this pod's network is unknown/);
  assert.equal(t.refusals.length, 2);
  await t.core.stop();
});

Deno.test("AgentCore checks the CNI ADD of a pod refused as too large like any, and refuses a clash", async () => {
  const t = setup();
  await t.core.start();
  // As the API source keeps it: a skeleton with its network annotations, no address yet.
  const big = pod("huge", undefined, 1);
  big.spec.containers[0].readinessProbe!.httpGet!.path = "/" + "x".repeat(20_000);
  const huge = normalisePod(big, {
    maxBytes: 16 * 1024,
    annotations: [CONFIG.networkAnnotation, CONFIG.networkIdAnnotation],
  });
  t.sources[0].list(pod("holder", "10.0.0.5", 2), huge);
  await t.settle();
  const attach = (ip: string) =>
    t.core.registerAttachment({ namespace: "ns", name: "p-huge", uid: "huge", ips: [ip] });
  await assert.rejects(attach("10.0.0.5"), AttachmentRefusedError);
  assert.deepEqual(t.refusals.map((r) => r.map((c) => c.holder.uid)), [["holder"]]);
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=2"]);
  // At an address of its own it is attached (and gets no targets), and detached again.
  await attach("10.0.0.6");
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=2"]);
  await t.core.removeAttachment("huge");
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

Deno.test("AgentCore takes an ADD whose pod the API names under another uid as of unknown network: refused at a held address, attached at a free one", async () => {
  const other = pod("new", undefined, 2);
  other.metadata.uid = "someone-else";
  const t = setup(["api"], {}, undefined, lookupOf(other));
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 2));
  await t.settle();
  // The other pod's network (the holder's) says nothing of this one's.
  await assert.rejects(unnamedAttach(t.core, "new"), AttachmentRefusedError);
  assert.equal(t.refusals.length, 1);
  await t.core.registerAttachment({
    namespace: "ns",
    name: "p-new",
    uid: "new",
    ips: ["10.0.0.6"],
  });
  assert.deepEqual(ids(t.store), ["10.0.0.5:8080=2"]);
  await t.core.stop();
});

Deno.test("AgentCore refuses an ADD whose network the API cannot tell within its deadline at a held address, and fails open at a free one", async () => {
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
  const add = unnamedAttach(t.core, "late")
    .then(() => undefined, (e: unknown) => e)
    .finally(() => settled = true);
  await t.clock.tickAsync(ATTACH_LOOKUP_MS - 1);
  assert.equal(settled, false, "the ADD waits for the API up to its deadline");
  await t.clock.tickAsync(1);
  // Its network unknown, it may be another network's: refused (the runtime retries), and the
  // holder keeps its targets.
  const refused = await add;
  assert.ok(refused instanceof AttachmentRefusedError);
  assert.match(refused.message, /this pod's network is unknown/);
  assert.equal(calls, 1);
  assert.equal(t.refusals.length, 1);
  assert.deepEqual(ids(t.store), ["10.0.0.5:9090=2"]);
  // At an address nobody holds it is attached (fail open), and holds it against every network
  // until its network is known.
  const free = t.core.registerAttachment({
    namespace: "ns",
    name: "p-late",
    uid: "late",
    ips: ["10.0.0.6"],
  });
  await t.clock.tickAsync(ATTACH_LOOKUP_MS);
  await free;
  assert.equal(t.refusals.length, 1);
  assert.deepEqual(ids(t.store), ["10.0.0.5:9090=2"]);
  assert.deepEqual(t.core.view().sharedAddresses, []);
  await t.core.stop();
});

Deno.test("AgentCore withdraws the holder's targets while a later pod known from the CNI path alone has an unknown network, then tags none of the later pod's probes at the held address", async () => {
  // The holder is learnt after the later pod's ADD (the watch was behind): the later pod, known
  // from the CNI path alone, holds the address against every network until the watch says more.
  const t = setup(["api"], {}, undefined, lookupOf());
  await t.core.start();
  t.sources[0].list();
  await t.settle();
  await unnamedAttach(t.core, "late");
  t.sources[0].list(pod("holder", "10.0.0.5", 2, "2026-01-01T00:00:00Z", 9090));
  await t.settle();
  assert.deepEqual(ids(t.store), [], "the kubelet may probe the later pod on the holder's port");
  assert.deepEqual(t.clashes.map(([a, p]) => [a.address, p.pod.uid]), [
    ["10.0.0.5", "holder"],
    ["10.0.0.5", "late"],
  ]);
  t.clashes.length = 0;
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

Deno.test("AgentCore keeps the network the API told at a pod's ADD while the CNI path alone knows the pod, so a same-network holder at its address keeps its targets", async () => {
  // The watch is behind: the pod is known from the CNI path alone, but its ADD read its network
  // (1, the holder's) from the API.
  const t = setup(["api"], {}, undefined, lookupOf(pod("new", undefined, 1)));
  await t.core.start();
  t.sources[0].list(pod("holder", "10.0.0.5", 1, "2026-01-01T00:00:00Z", 9090));
  await t.settle();
  await unnamedAttach(t.core, "new");
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:9090=1"], "the holder keeps its own");
  assert.equal(t.clashes.length, 0, "no AddressClash");
  assert.deepEqual(t.core.view().sharedAddresses, []);
  // That network holds the address against the others': a later pod of network 2 there gets
  // none of its probes tagged.
  t.sources[0].list(
    pod("holder", "10.0.0.5", 1, "2026-01-01T00:00:00Z", 9090),
    pod("other", "10.0.0.5", 2, "2026-01-03T00:00:00Z", 8080),
  );
  await t.settle();
  assert.deepEqual(ids(t.store), ["10.0.0.5:9090=1"]);
  assert.deepEqual(t.clashes.map(([a, p]) => [a.address, p.pod.uid]), [["10.0.0.5", "other"]]);
  // Gone at its DEL: nothing of it is kept.
  await t.core.removeAttachment("new");
  await t.core.stop();
});

Deno.test("AgentCore holds the address a pod's new sandbox was attached at while the API still shows its old one, and refuses another network there", async () => {
  const t = setup();
  await t.core.start();
  // The API still shows pod "a" (network 1) at its old sandbox's 10.0.0.8; "b" awaits its ADD.
  t.sources[0].list(pod("a", "10.0.0.8", 1), pod("b", undefined, 2));
  await t.settle();
  const attach = (uid: string, ip: string, networkId: number, containerId: string) =>
    t.core.registerAttachment({
      namespace: "ns",
      name: `p-${uid}`,
      uid,
      ips: [ip],
      network: `net${networkId}`,
      networkId,
    }, { containerId, ifname: "eth0" });
  // The new sandbox of "a" (the old one ended, the runtime made another) gets 10.0.0.5:
  // the kubelet probes "a" there at once, while the API catches up.
  await attach("a", "10.0.0.5", 1, "a-2");
  await assert.rejects(attach("b", "10.0.0.5", 2, "b-1"), (e: Error) => {
    assert.ok(e instanceof AttachmentRefusedError);
    assert.match(e.message, /Address 10\.0\.0\.5 is already used on this node/);
    return true;
  });
  assert.deepEqual(t.refusals.map((r) => r.map((c) => c.holder.uid)), [["a"]]);
  // No entry at 10.0.0.5 for network 2: the kubelet's probes of "a" there reach no other pod.
  assert.deepEqual(ids(t.store), ["10.0.0.8:8080=1"]);
  await t.core.stop();
});
