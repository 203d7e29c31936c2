import assert from "node:assert/strict";
import { type ClashCheck, refuseClashingAttachment } from "./clashes.ts";
import { desiredState } from "../../rules/desired_state.ts";
import type { RulesMemo } from "../../rules/address_placement.ts";
import { type Attachment, AttachmentRefusedError } from "../../cni/protocol.ts";
import type { AddressClash } from "../../rules/conflicts.ts";
import { assertUsable, normalisePod, type Pod } from "../../pods/pod.ts";
import type { PodNetwork } from "../../rules/pod_network.ts";
import { podLookups } from "../../../tests/helpers/core_world.ts";

const CONFIG = { networkAnnotation: "lace.io/network", networkIdAnnotation: "lace.io/network-id" };

function pod(uid: string, ip: string, networkId: number): Pod {
  return {
    metadata: {
      name: `p-${uid}`,
      namespace: "ns",
      uid,
      annotations: {
        "lace.io/network": `net${networkId}`,
        "lace.io/network-id": String(networkId),
      },
    },
    spec: { nodeName: "n1", containers: [] },
    status: { phase: "Running", podIPs: [{ ip }] },
  };
}

/**
 * `pod(uid, ip, networkId)` with probe paths over the API source's size cap, as that source keeps
 * it: refused (no targets), a skeleton of who it is and where it sits. `annotations` replaces
 * its network annotations (null: none at all).
 */
function refusedPod(
  uid: string,
  ip: string,
  networkId: number,
  annotations?: Record<string, string> | null,
): Pod {
  const p = pod(uid, ip, networkId) as Pod & { metadata: { annotations?: unknown } };
  if (annotations !== undefined) p.metadata.annotations = annotations ?? undefined;
  p.spec.containers = [{
    name: "c",
    readinessProbe: { httpGet: { port: 8080, path: "/" + "x".repeat(20_000) } },
  }];
  return normalisePod(p, {
    maxBytes: 16 * 1024,
    annotations: [CONFIG.networkAnnotation, CONFIG.networkIdAnnotation],
  });
}

function attachment(ips = ["10.0.0.5"]): Attachment {
  return { namespace: "ns", name: "p-new", uid: "new", ips };
}

/** The network the attachment is in (attachmentNetwork()'s answer). */
function net(networkId: number): PodNetwork {
  return networkId === 0
    ? { network: "", networkId: 0 }
    : { network: `net${networkId}`, networkId };
}

/** A check over these pods (an Error makes the cache throw for that uid), recording refusals. */
function check(
  pods: [string, Pod | Error][],
  nodeNetworks = new Map<string, PodNetwork>(),
): ClashCheck & { refusals: AddressClash[][] } {
  const byUid = new Map(pods);
  const refusals: AddressClash[][] = [];
  return {
    pods: podLookups(byUid),
    nodeNetworks,
    config: CONFIG,
    memo: new WeakMap(),
    onRefused: (_a, clashes) => refusals.push(clashes),
    refusals,
  };
}

Deno.test("refuseClashingAttachment() refuses an address a pod of another network holds", () => {
  const c = check([["holder", pod("holder", "10.0.0.5", 2)]]);
  assert.throws(() => refuseClashingAttachment(attachment(), net(1), c), (e: Error) => {
    assert.ok(e instanceof AttachmentRefusedError);
    assert.match(e.message, /Address 10\.0\.0\.5 is already used on this node/);
    return true;
  });
  assert.deepEqual(c.refusals.map((r) => r.map((x) => [x.holder.uid, x.address])), [
    [["holder", "10.0.0.5"]],
  ]);
});

Deno.test("refuseClashingAttachment() accepts an address held in the same network", () => {
  const c = check([["holder", pod("holder", "10.0.0.5", 2)]]);
  refuseClashingAttachment(attachment(), net(2), c);
  assert.equal(c.refusals.length, 0);
});

Deno.test("refuseClashingAttachment() refuses a default-network attachment at an address a Lace network holds", () => {
  const c = check([["holder", pod("holder", "10.0.0.5", 2)]]);
  assert.throws(() => refuseClashingAttachment(attachment(), net(0), c), AttachmentRefusedError);
});

Deno.test("refuseClashingAttachment() places a holder in the network the node attached it to", () => {
  const c = check(
    [["holder", pod("holder", "10.0.0.5", 1)]],
    new Map([["holder", { network: "net2", networkId: 2 }]]),
  );
  assert.throws(() => refuseClashingAttachment(attachment(), net(1), c), AttachmentRefusedError);
});

Deno.test("refuseClashingAttachment() refuses an address a pod refused as too large holds in another network", () => {
  const c = check([["huge", refusedPod("huge", "10.0.0.5", 2)]]);
  assert.throws(() => assertUsable(refusedPod("huge", "10.0.0.5", 2)), /over the cap/);
  assert.throws(() => refuseClashingAttachment(attachment(), net(1), c), AttachmentRefusedError);
  assert.deepEqual(c.refusals.map((r) => r.map((x) => [x.holder.uid, x.address])), [
    [["huge", "10.0.0.5"]],
  ]);
  // Of its own network: the usual rule, no clash.
  refuseClashingAttachment(attachment(), net(2), c);
  assert.equal(c.refusals.length, 1);
});

Deno.test("refuseClashingAttachment() refuses every network at the address of a refused pod whose network is unknown", () => {
  const unknown = refusedPod("huge", "10.0.0.5", 2, {
    "lace.io/network": "net 2",
    "lace.io/network-id": "2",
  });
  const c = check([["huge", unknown]]);
  for (const id of [0, 1, 2]) {
    assert.throws(() => refuseClashingAttachment(attachment(), net(id), c), (e: Error) => {
      assert.ok(e instanceof AttachmentRefusedError);
      // The pod's Event text (conflicts.ts refusalMessage) names no other tenant; nor does this.
      assert.doesNotMatch(e.message, /huge|net 2|ns\//);
      return true;
    });
  }
  // Not at another address, and never against a new sandbox of the same pod.
  refuseClashingAttachment(attachment(["10.0.0.6"]), net(1), c);
  refuseClashingAttachment({ ...attachment(), uid: "huge" }, net(1), c);
  assert.equal(c.refusals.length, 3);
});

Deno.test("refuseClashingAttachment() holds a refused pod without annotations to the network the node attached it to", () => {
  const c = check(
    [["huge", refusedPod("huge", "10.0.0.5", 2, null)]],
    new Map([["huge", { network: "net2", networkId: 2 }]]),
  );
  assert.throws(() => refuseClashingAttachment(attachment(), net(1), c), AttachmentRefusedError);
  refuseClashingAttachment(attachment(), net(2), c);
});

Deno.test("refuseClashingAttachment() passes over a pod that cannot be evaluated", () => {
  const c = check([["bad", new Error("views disagree")], ["holder", pod("holder", "10.0.0.6", 2)]]);
  refuseClashingAttachment(attachment(), net(1), c);
  assert.equal(c.refusals.length, 0);
});

Deno.test("refuseClashingAttachment() and desiredState() place a pod once between them, in one memo", () => {
  const holder = pod("holder", "10.0.0.5", 2);
  const memo: RulesMemo = new WeakMap();
  const c = { ...check([["holder", holder]]), memo };
  assert.throws(() => refuseClashingAttachment(attachment(), net(1), c), AttachmentRefusedError);
  const placed = memo.get(holder)?.placement;
  assert.equal(placed?.network?.networkId, 2, "the ADD placed the holder");
  const state = desiredState({
    uids: ["holder"],
    pods: {
      get: () => holder,
      holderView: () => holder,
      identity: (uid) => ({ namespace: "ns", name: uid, uid }),
    },
    nodeNetworks: new Map(),
    config: {
      ...CONFIG,
      probeMark: 0x1000,
      markShift: 16,
      addressConflict: "fail-closed",
      addressSharing: "exclusive",
      maxTargetsPerPod: 64,
    },
    capacity: 100,
    memo,
  });
  assert.deepEqual(state.skips, []);
  assert.equal(memo.get(holder)?.placement, placed, "the reconcile used the ADD's placement");
  assert.ok(memo.get(holder)?.result, "and added the rules' targets to the same entry");
});

Deno.test("refuseClashingAttachment() refuses every network at the address of a pod whose network annotations are malformed", () => {
  const unknown = pod("u", "10.0.0.5", 2);
  unknown.metadata.annotations = { "lace.io/network": "net 2", "lace.io/network-id": "2" };
  const c = check([["u", unknown]]);
  for (const id of [0, 1, 2]) {
    assert.throws(() => refuseClashingAttachment(attachment(), net(id), c), AttachmentRefusedError);
  }
  // The node's attach network tells it: then only another network is refused.
  const known = check([["u", unknown]], new Map([["u", net(2)]]));
  refuseClashingAttachment(attachment(), net(2), known);
  assert.throws(
    () => refuseClashingAttachment(attachment(), net(1), known),
    AttachmentRefusedError,
  );
});

Deno.test("refuseClashingAttachment() refuses exactly where desiredState() would find the address held by another network", () => {
  // One rule (addressPlacement) for both: a holder of each kind whose network is known, unknown
  // (malformed annotations, known from the CNI path alone, refused without a network), refused
  // with a network, or evaluable in a network.
  const malformed = pod("m", "10.0.0.1", 2);
  malformed.metadata.annotations = { "lace.io/network": "net 2" };
  const holders: [string, Pod, string[]][] = [
    ["plain", pod("plain", "10.0.0.2", 2), []],
    ["m", malformed, []],
    [
      "cni",
      { ...pod("cni", "10.0.0.3", 2), metadata: { name: "c", namespace: "ns", uid: "cni" } },
      [
        "cni",
      ],
    ],
    ["huge", refusedPod("huge", "10.0.0.4", 2), []],
    ["hugeu", refusedPod("hugeu", "10.0.0.5", 2, { "lace.io/network": "x y" }), []],
  ];
  const config = {
    ...CONFIG,
    probeMark: 0x1000,
    markShift: 16,
    addressConflict: "fail-closed" as const,
    addressSharing: "exclusive" as const,
    maxTargetsPerPod: 64,
  };
  for (const [uid, holder, unknownUids] of holders) {
    const ip = holder.status!.podIPs![0].ip;
    for (const id of [0, 1, 2]) {
      const newcomer = pod("new", ip, id);
      if (id === 0) delete newcomer.metadata.annotations;
      const c = {
        ...check([[uid, holder]]),
        networkUnknown: (u: string) => unknownUids.includes(u),
      };
      let refused = false;
      try {
        refuseClashingAttachment(attachment([ip]), net(id), c);
      } catch (e) {
        assert.ok(e instanceof AttachmentRefusedError);
        refused = true;
      }
      const state = desiredState({
        uids: [uid, "new"],
        pods: {
          ...podLookups(new Map([[uid, holder], ["new", newcomer]])),
          identity: (u) => ({ namespace: "ns", name: u, uid: u }),
        },
        nodeNetworks: new Map(),
        config,
        capacity: 100,
        memo: new WeakMap(),
        networkUnknown: c.networkUnknown,
      });
      const held = state.sharedAddresses.some((s) => s.address === ip);
      assert.equal(refused, held, `holder ${uid}, newcomer in network ${id}`);
    }
  }
});
