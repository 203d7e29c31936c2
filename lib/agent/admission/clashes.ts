/**
 * The refusal of a CNI attachment whose address a live pod of another network
 * already holds on this node, so the kubelet's probes of one pod are never
 * delivered into the other's network.
 */
import { getLogger } from "@logtape/logtape";
import { type Attachment, AttachmentRefusedError } from "../../cni/protocol.ts";
import { type AddressClash, addressClashes } from "../../rules/conflicts.ts";
import type { PodCache } from "../../pods/cache.ts";
import { canonicalAddress } from "../../net/address.ts";
import { type PodNetwork, type TargetOptions, UNKNOWN_NETWORK } from "../../rules/pod_network.ts";
import type { PodPlacement } from "../../rules/placement.ts";
import { addressPlacement, type RulesMemo } from "../../rules/address_placement.ts";
import { errorText } from "../../text/error.ts";
import { callHook } from "../problems.ts";
import { aboutPod, limitedLog } from "../../log/limiter.ts";

const log = getLogger(["lace", "agent"]);

/** Who holds the address, said to an attachment whose own network is unknown. */
const UNKNOWN_BY =
  "by another pod, and this pod's network is unknown (the CNI conf names none and no valid network annotations were known in time), so it may be another network";

export interface ClashCheck {
  pods: Pick<PodCache, "uids" | "get" | "holderView">;
  /** The network the node attached each pod to, by uid (authoritative over annotations). */
  nodeNetworks: ReadonlyMap<string, PodNetwork>;
  config: TargetOptions;
  /** The reconcile's memo: an ADD costs a lookup per pod, and places a pod the reconcile has not. */
  memo: RulesMemo;
  /** Whether nothing can tell this pod's network yet (see DesiredStateInput.networkUnknown). */
  networkUnknown?: (uid: string) => boolean;
  /** The network a pod's ADD learnt (AddressPlacementInput.learntNetwork). */
  learntNetwork?: (uid: string) => PodNetwork | undefined;
  /** The addresses of each pod's current sandbox (AddressPlacementInput.attachedAddresses). */
  attachedAddresses?: (uid: string) => readonly string[];
  /**
   * Called with the refused attachment and its clashes (for Events); `networkUnknown` when the
   * attachment's own network is unknown (UNKNOWN_NETWORK).
   */
  onRefused?: (attachment: Attachment, clashes: AddressClash[], networkUnknown: boolean) => void;
}

/**
 * Refuses an attachment that brings an address a live pod of another network
 * already holds on this node: the kubelet's probes of either pod could be
 * delivered into the other's network. Throws AttachmentRefusedError, which
 * the CNI server turns into a refusal that fails the ADD (the runtime
 * retries, and the address manager picks another address). `network` is the
 * attachment's (attachmentNetwork()), UNKNOWN_NETWORK when that is unknown: it is
 * then refused at an address any pod of a known network holds, as it may be
 * another network's (fail closed). Holders are placed by the reconcile's rule
 * (addressPlacement()): one whose network nothing tells (annotations malformed,
 * known from the CNI path alone, refused as too large without a network) holds
 * its addresses against every network.
 */
export function refuseClashingAttachment(
  a: Attachment,
  network: PodNetwork,
  check: ClashCheck,
): void {
  const { pods, nodeNetworks } = check;
  const placements: PodPlacement[] = [];
  for (const uid of pods.uids()) {
    try {
      // The reconcile's rule (addressPlacement): a pod the cache cannot evaluate (refused as too
      // large) or whose network nothing tells holds its addresses all the same, against every
      // network when its network is unknown; passing over it would let this attachment take the
      // address of a pod whose kubelet probes would then be tagged into this network.
      const placed = addressPlacement({ ...check, node: nodeNetworks.get(uid) }, uid);
      if (placed) placements.push(placed);
    } catch (error) {
      // Nothing of it is readable, so nothing says which addresses it has: refusing every ADD of
      // the node for it would let one pod stop all others from starting, so it is passed over,
      // loudly (the reconcile's address rule cannot place it either).
      limitedLog(
        log,
        "error",
        aboutPod("AttachUnchecked", a),
        "Cannot tell which addresses pod {uid} holds, so the CNI ADD of pod {pod} is not checked against them: {error}",
        { uid, pod: `${a.namespace}/${a.name}`, error: errorText(error) },
      );
    }
  }
  const addresses = a.ips.flatMap((ip) => {
    try {
      return [canonicalAddress(ip).address];
    } catch {
      return [];
    }
  });
  const clashes = addressClashes(
    { uid: a.uid, networkId: network.networkId, addresses },
    placements,
  );
  if (clashes.length === 0) return;
  limitedLog(
    log,
    "warning",
    aboutPod("AttachRefused", a),
    "Refused the CNI ADD of pod {pod} (network {network}): address {address} is held by pod {holder} of network {holderNetwork}",
    {
      pod: `${a.namespace}/${a.name}`,
      network: network.network || "(default)",
      address: clashes[0].address,
      holder: `${clashes[0].holder.namespace}/${clashes[0].holder.name}`,
      holderNetwork: clashes[0].holderNetwork.network || "(default)",
    },
  );
  const unknown = network.networkId === UNKNOWN_NETWORK.networkId;
  callHook(() => check.onRefused?.(a, clashes, unknown));
  throw new AttachmentRefusedError(
    `Address ${clashes[0].address} is already used on this node ${
      unknown ? UNKNOWN_BY : "by a pod of another network"
    }: the kubelet's probes could be delivered into the wrong network, so this attachment is refused; retry with another address (node-local pod addresses must be unique across networks)`,
  );
}
