import assert from "node:assert/strict";
import { desiredState, type DesiredStateConfig, targetViews } from "./desired_state.ts";
import type { RulesMemo } from "./address_placement.ts";
import { markFor } from "../probe/key.ts";
import { normalisePod, type Pod, PodRefusedError } from "../pods/pod.ts";
import { keyId } from "../probe/key.ts";
import type { PodNetwork } from "./pod_network.ts";
import { pod as podIn, podLookups } from "../../tests/helpers/core_world.ts";

const CONFIG: DesiredStateConfig = {
  networkAnnotation: "lace.io/network",
  networkIdAnnotation: "lace.io/network-id",
  probeMark: 0x1000,
  markShift: 16,
  addressConflict: "fail-closed",
  addressSharing: "exclusive",
  maxTargetsPerPod: 64,
};

/**
 * A running pod at `ip` in network `networkId` (none: the default network), the agent tests'
 * pod of that network, with one TCP readiness probe per port.
 */
function pod(
  uid: string,
  ip: string,
  networkId: number | undefined,
  ports = [8080],
  created = "2026-01-01T00:00:00Z",
): Pod {
  const p = podIn(uid, ip, networkId, created);
  p.spec.containers = ports.map((port, i) => ({
    name: `c${i}`,
    readinessProbe: { tcpSocket: { port } },
  }));
  return p;
}

/** desiredState over these pods; a uid mapped to an Error makes the cache throw for it. */
function compute(
  pods: (Pod | [string, Error])[],
  opts: {
    nodeNetworks?: Map<string, PodNetwork>;
    capacity?: number;
    config?: Partial<DesiredStateConfig>;
    memo?: RulesMemo;
    hostAddresses?: ReadonlySet<string>;
    /** The cache's identity of a pod (default: namespace ns, name p-<uid>). */
    identity?: (uid: string) => { namespace: string; name: string; uid: string } | undefined;
  } = {},
) {
  const byUid = new Map(
    pods.map((p) => Array.isArray(p) ? p : [p.metadata.uid, p] as [string, Pod | Error]),
  );
  return desiredState({
    uids: [...byUid.keys()],
    pods: {
      ...podLookups(byUid),
      identity: opts.identity ?? ((uid) => ({ namespace: "ns", name: `p-${uid}`, uid })),
    },
    nodeNetworks: opts.nodeNetworks ?? new Map(),
    config: { ...CONFIG, ...opts.config },
    capacity: opts.capacity ?? 1000,
    memo: opts.memo ?? new WeakMap(),
    ...(opts.hostAddresses ? { hostAddresses: opts.hostAddresses } : {}),
  });
}

Deno.test("desiredState() gives each entry the mark of its pod's network", () => {
  const state = compute([pod("a", "10.0.0.1", 1), pod("b", "10.0.0.2", 2)]);
  assert.deepEqual(
    [...state.desired.values()].map((e) => [keyId(e.key), e.value.networkId, e.value.mark]),
    [["10.0.0.1:8080", 1, markFor(CONFIG, 1)], ["10.0.0.2:8080", 2, markFor(CONFIG, 2)]],
  );
  assert.deepEqual(state.views.map((v) => v.pod.uid), ["a", "b"]);
});

Deno.test("desiredState() puts a pod in the network the node attached it to, not its annotation's", () => {
  const state = compute([pod("a", "10.0.0.1", 1)], {
    nodeNetworks: new Map([["a", { network: "net2", networkId: 2 }]]),
  });
  assert.deepEqual([...state.desired.values()].map((e) => e.value.networkId), [2]);
  assert.deepEqual(state.mismatches.map((m) => m.pod.uid), ["a"]);
});

Deno.test("desiredState() withdraws a key two networks claim under fail-closed", () => {
  const state = compute([pod("a", "10.0.0.5", 1), pod("b", "10.0.0.5", 2)]);
  assert.equal(state.desired.size, 0);
  assert.equal(state.conflicts.length, 1);
  assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"]);
});

Deno.test("desiredState() counts a default-network pod's probe as a claim but writes no entry for it", () => {
  const state = compute([pod("plain", "10.0.0.5", undefined), pod("lace", "10.0.0.5", 2)]);
  assert.equal(state.desired.size, 0);
  assert.deepEqual(state.conflicts[0].dropped.map((c) => c.pod.uid).sort(), ["lace", "plain"]);
});

Deno.test("desiredState() under exclusive tags none of a later pod's probes at an address another network holds, and the holder keeps its own", () => {
  const holder = pod("v", "10.0.0.5", 1, [9090], "2026-01-01T00:00:00Z");
  const later = pod("a", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
  const elsewhere = pod("b", "10.0.0.6", 2, [8080], "2026-01-02T00:00:00Z");
  const state = compute([later, elsewhere, holder]);
  assert.deepEqual([...state.desired.keys()].sort(), ["10.0.0.5:9090", "10.0.0.6:8080"]);
  assert.equal(state.desired.get("10.0.0.5:9090")?.value.networkId, 1);
  assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"], "a stale entry leaves at once");
  assert.deepEqual(
    state.sharedAddresses.map((s) => [s.address, s.holder.pod.uid, s.later.map((p) => p.pod.uid)]),
    [["10.0.0.5", "v", ["a"]]],
  );
  assert.deepEqual(state.conflicts, []);
});

Deno.test("desiredState() under exclusive still fails a key closed when the later pod probes it too", () => {
  // Tagged for the holder, the later pod's own probe to the key would land in the holder's network.
  const holder = pod("v", "10.0.0.5", 1, [9090, 9091], "2026-01-01T00:00:00Z");
  const later = pod("a", "10.0.0.5", 2, [9090], "2026-01-02T00:00:00Z");
  const state = compute([later, holder]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.5:9091"]);
  assert.deepEqual(state.conflicts.map((c) => keyId(c.key)), ["10.0.0.5:9090"]);
});

Deno.test("desiredState() under exclusive counts a pod without probes as the holder of its address", () => {
  const quiet = pod("q", "10.0.0.5", 1, [], "2026-01-01T00:00:00Z");
  const later = pod("a", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
  assert.equal(compute([later, quiet]).desired.size, 0);
});

Deno.test("desiredState() under shared tags both pods at one address and counts the address", () => {
  const holder = pod("v", "10.0.0.5", 1, [9090], "2026-01-01T00:00:00Z");
  const later = pod("a", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
  const state = compute([later, holder], { config: { addressSharing: "shared" } });
  assert.deepEqual(
    [...state.desired.values()].map((e) => [keyId(e.key), e.value.networkId]).sort(),
    [["10.0.0.5:8080", 2], ["10.0.0.5:9090", 1]],
  );
  assert.equal(state.sharedAddresses.length, 1);
  assert.deepEqual(state.withdraw, []);
});

Deno.test("desiredState() skips a pod that cannot be evaluated and keeps the others' entries", () => {
  const state = compute([["bad", new Error("views disagree")], pod("a", "10.0.0.1", 1)]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
  assert.equal(state.skips.length, 1);
  assert.equal(state.skips[0].reason, "malformed");
  assert.deepEqual(state.skips[0].pod, { namespace: "ns", name: "p-bad", uid: "bad" });
  assert.match(state.skips[0].message, /could not be evaluated.*views disagree/);
});

/**
 * `pod()` with probe paths over the API source's size cap, as that source keeps it: refused, a
 * skeleton of who it is and where it sits. `annotations` replaces its network annotations.
 */
function refused(
  uid: string,
  ip: string,
  networkId: number | undefined,
  created: string,
  annotations?: Record<string, string>,
): Pod {
  const p = pod(uid, ip, networkId, [8080], created);
  if (annotations) p.metadata.annotations = annotations;
  p.spec.containers[0].readinessProbe = {
    httpGet: { port: 8080, path: "/" + "x".repeat(20_000) },
  };
  return normalisePod(p, {
    maxBytes: 16 * 1024,
    annotations: [CONFIG.networkAnnotation, CONFIG.networkIdAnnotation],
  });
}

const UNKNOWN = { "lace.io/network": "blue net", "lace.io/network-id": "1" };

Deno.test("desiredState() under exclusive lets a pod refused as too large hold its address against a later pod of another network", () => {
  const huge = refused("huge", "10.0.0.5", 1, "2026-01-01T00:00:00Z");
  const later = pod("b", "10.0.0.5", 2, [8080, 9090], "2026-01-02T00:00:00Z");
  const state = compute([later, huge]);
  assert.deepEqual([...state.desired.keys()], [], "none of the later pod's probes at the address");
  assert.deepEqual(
    state.sharedAddresses.map((s) => [s.address, s.holder.pod.uid, s.later.map((p) => p.pod.uid)]),
    [["10.0.0.5", "huge", ["b"]]],
  );
  assert.deepEqual(state.skips.map((s) => [s.pod.uid, s.reason]), [["huge", "too-large"]]);
  // A later pod of the refused pod's own network is not displaced (the usual rule).
  const peer = pod("c", "10.0.0.5", 1, [8080], "2026-01-02T00:00:00Z");
  assert.deepEqual([...compute([peer, huge]).desired.keys()], ["10.0.0.5:8080"]);
});

Deno.test("desiredState() under exclusive lets a refused pod whose network is unknown hold its address against every network", () => {
  const huge = refused("huge", "10.0.0.5", 1, "2026-01-01T00:00:00Z", UNKNOWN);
  for (const networkId of [undefined, 1, 2]) {
    const later = pod("b", "10.0.0.5", networkId, [8080], "2026-01-02T00:00:00Z");
    const state = compute([later, huge]);
    assert.deepEqual([...state.desired.keys()], [], `network ${networkId}`);
    assert.deepEqual(state.sharedAddresses.map((s) => s.holder.pod.uid), ["huge"]);
    assert.deepEqual(state.sharedAddresses[0].later.map((p) => p.pod.uid), ["b"]);
  }
});

Deno.test("desiredState() under exclusive withdraws the holder's targets when a later refused pod's network is unknown", () => {
  // The kubelet may reach that pod without a mark (it may be on the default network), and it
  // could answer with a redirect to the holder's probe port.
  const holder = pod("a", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
  const huge = refused("huge", "10.0.0.5", 1, "2026-01-02T00:00:00Z", UNKNOWN);
  const state = compute([huge, holder]);
  assert.deepEqual([...state.desired.keys()], []);
  assert.equal(state.sharedAddresses[0].holderWithdrawn, true);
});

Deno.test("desiredState() under exclusive withdraws the holder's targets at an address a later refused pod of another network holds", () => {
  // The refused pod's probes are unknown: one of them may be on the holder's probe port.
  const holder = pod("a", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
  const elsewhere = pod("e", "10.0.0.6", 1, [8080], "2026-01-01T00:00:00Z");
  const huge = refused("huge", "10.0.0.5", 2, "2026-01-02T00:00:00Z");
  const state = compute([huge, holder, elsewhere]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.6:8080"]);
  assert.equal(state.sharedAddresses[0].holderWithdrawn, true);
  // Of the holder's own network, the refused pod is a peer: the holder keeps its targets.
  const peer = refused("peer", "10.0.0.5", 1, "2026-01-02T00:00:00Z");
  assert.deepEqual([...compute([peer, holder]).desired.keys()], ["10.0.0.5:8080"]);
});

Deno.test("desiredState() reports a pod refused for its size as too-large", () => {
  const refused = new PodRefusedError("too-large", "over the cap of 16384");
  const state = compute([["huge", refused], pod("a", "10.0.0.1", 1)]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
  assert.deepEqual(state.skips.map((s) => s.reason), ["too-large"]);
  assert.match(state.skips[0].message, /over the cap of 16384/);
});

Deno.test("desiredState() writes a pod's first targets up to the cap and reports the rest", () => {
  const state = compute([pod("big", "10.0.0.1", 1, [9003, 9001, 9002])], {
    config: { maxTargetsPerPod: 2 },
  });
  assert.deepEqual([...state.desired.keys()].sort(), ["10.0.0.1:9001", "10.0.0.1:9003"]);
  assert.deepEqual(state.unwritten.map((u) => [u.reason, u.count, u.wanted]), [["cap", 1, 3]]);
  // Each view is its own target's: the container that probes that port, the entry written for it.
  assert.deepEqual(state.views.map((v) => [v.container, v.entry.key.port]).sort(), [
    ["c0", 9003],
    ["c1", 9001],
  ]);
  for (const v of state.views) assert.equal(state.desired.get(keyId(v.entry.key)), v.entry);
});

Deno.test("desiredState() trims the pod that floods a full map and keeps the others", () => {
  const flood = Array.from({ length: 30 }, (_, i) => 20000 + i);
  const state = compute(
    [pod("flood", "10.0.0.9", 3, flood), pod("a", "10.0.0.1", 1, [80, 81])],
    { capacity: 10 },
  );
  assert.equal(state.desired.size, 10);
  assert.ok(state.desired.has("10.0.0.1:80") && state.desired.has("10.0.0.1:81"));
  assert.deepEqual(state.unwritten.map((u) => [u.pod.uid, u.reason, u.count]), [
    ["flood", "map-full", 22],
  ]);
});

Deno.test("desiredState() runs the rules again for a pod only when its node network changes", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1);
  compute([a], { memo });
  const first = memo.get(a);
  compute([a], { memo });
  assert.equal(memo.get(a), first, "same pod object, same network: the memo is reused");
  compute([a], { memo, nodeNetworks: new Map([["a", { network: "net2", networkId: 2 }]]) });
  assert.notEqual(memo.get(a), first);
});

Deno.test("desiredState() hands back the same views and entries while a pod does not change", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1, [8080, 9000]);
  const first = compute([a], { memo });
  const again = compute([a], { memo });
  assert.equal(again.views.length, 2);
  again.views.forEach((v, i) => assert.equal(v, first.views[i]));
  assert.equal(again.desired.get(keyId(again.views[0].entry.key)), first.views[0].entry);
  const moved = compute([pod("a", "10.0.0.2", 1, [8080, 9000])], { memo });
  assert.notEqual(moved.views[0], first.views[0], "a changed pod gets new views");
});

Deno.test("targetViews() shares one frozen value per network and copies each target's fields", () => {
  const views = compute([pod("a", "10.0.0.1", 3, [8080, 9000])]).views;
  assert.equal(views[0].entry.value, views[1].entry.value);
  assert.ok(Object.isFrozen(views[0].entry.value));
  assert.deepEqual(views[0].entry.value, { networkId: 3, mark: markFor(CONFIG, 3) });
  const http = {
    key: { family: "ipv4", address: "10.0.0.9", port: 80 },
    networkId: 4,
    network: "net4",
    pod: { namespace: "ns", name: "p", uid: "u" },
    container: "c",
    probe: "liveness",
    handler: "httpGet",
    http: { path: "/", scheme: "HTTP" },
    periodSeconds: 3,
  } as const;
  const { key, networkId, ...rest } = http;
  assert.deepEqual(targetViews([http], CONFIG), [{
    entry: { key, value: { networkId, mark: markFor(CONFIG, 4) } },
    ...rest,
  }]);
  const { http: _, periodSeconds: __, ...tcp } = http;
  const [plain] = targetViews([{
    ...tcp,
    key: { family: "ipv6", address: "fd00::1", port: 81 },
    probe: "readiness",
    handler: "tcpSocket",
  }], CONFIG);
  assert.deepEqual(Object.keys(plain), [
    "entry",
    "network",
    "pod",
    "container",
    "probe",
    "handler",
  ]);
});

Deno.test("desiredState() skips a pod whose network name is refused and keeps every other pod's targets", () => {
  const bad = pod("b", "10.0.0.2", 2);
  bad.metadata.annotations!["lace.io/network"] = "net2\r\n05:00:00.000 INF forged";
  const state = compute([pod("a", "10.0.0.1", 1), bad, pod("c", "10.0.0.3", 3)]);
  assert.deepEqual([...state.desired.values()].map((e) => keyId(e.key)), [
    "10.0.0.1:8080",
    "10.0.0.3:8080",
  ]);
  assert.deepEqual(
    state.skips.map((s) => [s.pod.uid, s.reason]),
    [["b", "annotation"]],
  );
});

Deno.test("desiredState() under exclusive lets a pod whose network annotations are malformed hold its address against every network, and withdraws the holder's targets when it comes later", () => {
  // Evaluable, but nothing tells its network: it gets no targets, and the kubelet's probes of it
  // (on any port, the holder's too) must never be tagged into another network at its address.
  const unknown = pod("u", "10.0.0.5", 2, [8080], "2026-01-01T00:00:00Z");
  Object.assign(unknown.metadata.annotations!, UNKNOWN);
  for (const networkId of [undefined, 1, 2]) {
    const later = pod("b", "10.0.0.5", networkId, [8080], "2026-01-02T00:00:00Z");
    const state = compute([later, unknown]);
    assert.deepEqual([...state.desired.keys()], [], `network ${networkId}`);
    assert.deepEqual(state.sharedAddresses.map((s) => s.holder.pod.uid), ["u"]);
  }
  const holder = pod("a", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
  const late = pod("u", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
  Object.assign(late.metadata.annotations!, UNKNOWN);
  const state = compute([late, holder]);
  assert.deepEqual([...state.desired.keys()], []);
  assert.equal(state.sharedAddresses[0].holderWithdrawn, true);
  assert.deepEqual(state.skips.map((s) => [s.pod.uid, s.reason]), [["u", "annotation"]]);
});

for (const addressSharing of ["exclusive", "shared"] as const) {
  Deno.test(`desiredState() under ${addressSharing} gives no pod a target at one of the node's own addresses, withdraws it and reports the pod`, () => {
    const host = new Set(["10.0.0.5", "fd00::5"]);
    const state = compute([pod("a", "10.0.0.5", 1), pod("b", "10.0.0.6", 2)], {
      hostAddresses: host,
      config: { addressSharing },
    });
    assert.deepEqual([...state.desired.values()].map((e) => keyId(e.key)), ["10.0.0.6:8080"]);
    assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"]);
    assert.deepEqual(state.hostHeld.map((h) => [h.pod.uid, h.address]), [["a", "10.0.0.5"]]);
    const skip = state.skips.find((s) => s.reason === "host-address");
    assert.equal(skip?.pod.uid, "a");
    assert.match(skip?.message ?? "", /10\.0\.0\.5 is one of this node's own addresses/);
  });
}

Deno.test("desiredState() holds the node's addresses against a pod whose network is unknown or the default too", () => {
  const state = compute([pod("plain", "10.0.0.5", undefined), pod("b", "10.0.0.5", 2)], {
    hostAddresses: new Set(["10.0.0.5"]),
    config: { addressSharing: "shared" },
  });
  assert.equal(state.desired.size, 0);
  assert.deepEqual(state.hostHeld.map((h) => h.pod.uid).sort(), ["b", "plain"]);
});

Deno.test("desiredState() keeps the views of a pod the node attached while neither changes", () => {
  const memo: RulesMemo = new WeakMap();
  const a = pod("a", "10.0.0.1", 1, [8080, 9000]);
  const nodeNetworks = new Map([["a", { network: "net2", networkId: 2 }]]);
  const first = compute([a], { memo, nodeNetworks });
  const again = compute([a], { memo, nodeNetworks });
  assert.deepEqual(again.views.map((v) => v.entry.value.networkId), [2, 2]);
  again.views.forEach((v, i) => assert.equal(v, first.views[i]));
});

Deno.test("desiredState() under exclusive counts the probes of a pod whose rules throw as unknown: the holder of its address loses its targets there", () => {
  const holder = pod("h", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
  const elsewhere = pod("e", "10.0.0.6", 1, [8080], "2026-01-01T00:00:00Z");
  const later = pod("x", "10.0.0.5", 2, [9090], "2026-01-02T00:00:00Z");
  // Stands for any shape the rules choke on that the cache does not refuse (its views merged).
  Object.defineProperty(later.spec, "containers", {
    get() {
      throw new RangeError("Maximum call stack size exceeded");
    },
  });
  const state = compute([later, holder, elsewhere]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.6:8080"]);
  assert.deepEqual(state.withdraw.map(keyId), ["10.0.0.5:8080"]);
  assert.equal(state.sharedAddresses[0].holderWithdrawn, true);
  assert.deepEqual(state.skips.map((s) => [s.pod.uid, s.reason]), [["x", "malformed"]]);
  assert.match(state.skips[0].message, /Maximum call stack size exceeded/);
});

Deno.test("desiredState() keeps a trimmed pod's first targets in its spec order, not in key order", () => {
  const flood = Array.from({ length: 30 }, (_, i) => 20029 - i);
  const state = compute(
    [pod("flood", "10.0.0.9", 3, flood), pod("a", "10.0.0.1", 1, [80, 81])],
    { capacity: 10 },
  );
  assert.deepEqual(
    [...state.desired.keys()].filter((k) => k.startsWith("10.0.0.9:")).sort(),
    flood.slice(0, 8).map((port) => `10.0.0.9:${port}`).sort(),
  );
  assert.deepEqual(state.unwritten.map((u) => [u.pod.uid, u.count]), [["flood", 22]]);
});

Deno.test("desiredState() names a pod it cannot evaluate by its uid alone when the cache knows nothing else of it", () => {
  const state = compute([["gone", new Error("no view left")], pod("a", "10.0.0.1", 1)], {
    identity: (uid) => uid === "gone" ? undefined : { namespace: "ns", name: `p-${uid}`, uid },
  });
  assert.deepEqual(state.skips.map((s) => s.pod), [{ namespace: "", name: "", uid: "gone" }]);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.1:8080"]);
});

for (const addressSharing of ["exclusive", "shared"] as const) {
  Deno.test(`desiredState() under older-wins and ${addressSharing} writes the older pod's entry for a key two networks claim, and withdraws nothing`, () => {
    const older = pod("a", "10.0.0.5", 1, [8080], "2026-01-01T00:00:00Z");
    const newer = pod("b", "10.0.0.5", 2, [8080], "2026-01-02T00:00:00Z");
    const state = compute([newer, older], {
      config: { addressConflict: "older-wins", addressSharing },
    });
    assert.deepEqual(
      [...state.desired.values()].map((e) => [keyId(e.key), e.value.networkId]),
      [["10.0.0.5:8080", 1]],
    );
    assert.deepEqual(
      state.conflicts.map((c) => [c.kept?.pod.uid, c.dropped.map((d) => d.pod.uid)]),
      [["a", ["b"]]],
    );
    assert.deepEqual(state.withdraw, [], "the kept entry must not leave the map");
  });
}

Deno.test("desiredState() holds no address for the host when it knows none of the node's addresses", () => {
  const state = compute([pod("a", "10.0.0.5", 1)]);
  assert.deepEqual(state.hostHeld, []);
  assert.deepEqual([...state.desired.keys()], ["10.0.0.5:8080"]);
  assert.deepEqual(state.skips, []);
});

Deno.test("targetViews() keeps a target's probe period, and gives a target without one none", () => {
  const target = {
    key: { family: "ipv4", address: "10.0.0.9", port: 80 },
    networkId: 4,
    network: "net4",
    pod: { namespace: "ns", name: "p", uid: "u" },
    container: "c",
    probe: "liveness",
  } as const;
  const entry = { key: target.key, value: { networkId: 4, mark: markFor(CONFIG, 4) } };
  const { key: _, networkId: __, ...fields } = target;
  const tcp = { ...target, handler: "tcpSocket", periodSeconds: 7 } as const;
  assert.deepEqual(targetViews([tcp], CONFIG), [{
    entry,
    ...fields,
    handler: "tcpSocket",
    periodSeconds: 7,
  }]);
  const http = { ...target, handler: "httpGet", http: { path: "/", scheme: "HTTP" } } as const;
  assert.deepEqual(targetViews([http], CONFIG), [{
    entry,
    ...fields,
    handler: "httpGet",
    http: { path: "/", scheme: "HTTP" },
  }]);
});
