/**
 * desiredState() at an address pods of two networks share: exclusive tags none of the later
 * pod's probes there, shared tags both, and a pod whose probes or network are unknown holds it.
 */
import assert from "node:assert/strict";
import { normalisePod, type Pod } from "../pods/pod.ts";
import { keyId } from "../probe/key.ts";
import { compute, CONFIG, pod } from "../../tests/helpers/desired_state_world.ts";

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
