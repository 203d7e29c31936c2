import assert from "node:assert/strict";
import { type ClashCheck, refuseClashingAttachment } from "./attachment_clashes.ts";
import { desiredState, type RulesMemo } from "./desired_state.ts";
import { type Attachment, AttachmentRefusedError } from "../cni/protocol.ts";
import type { AddressClash } from "../rules/conflicts.ts";
import type { Pod } from "../pods/pod.ts";
import type { PodNetwork } from "../rules/pod_network.ts";

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
    pods: {
      uids: () => [...byUid.keys()],
      get(uid) {
        const p = byUid.get(uid);
        if (p instanceof Error) throw p;
        return p;
      },
    },
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
    pods: { get: () => holder, identity: (uid) => ({ namespace: "ns", name: uid, uid }) },
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
