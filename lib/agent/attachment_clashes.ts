/**
 * The refusal of a CNI attachment whose address a live pod of another network
 * already holds on this node, so the kubelet's probes of one pod are never
 * delivered into the other's network.
 */
import { getLogger } from "@logtape/logtape";
import { type Attachment, AttachmentRefusedError } from "../cni/protocol.ts";
import { type AddressClash, addressClashes } from "../rules/conflicts.ts";
import type { PodCache } from "../pods/cache.ts";
import { canonicalAddress } from "../datapath/probe_map.ts";
import type { PodNetwork, TargetOptions } from "../rules/pod_network.ts";
import type { PodPlacement } from "../rules/placement.ts";
import { placementOf, type RulesMemo } from "./desired_state.ts";
import { callHook } from "./problems.ts";

const log = getLogger(["lace", "agent"]);

export interface ClashCheck {
  pods: Pick<PodCache, "uids" | "get">;
  /** The network the node attached each pod to, by uid (authoritative over annotations). */
  nodeNetworks: ReadonlyMap<string, PodNetwork>;
  config: TargetOptions;
  /** The reconcile's memo: an ADD costs a lookup per pod, and places a pod the reconcile has not. */
  memo: RulesMemo;
  /** Whether nothing can tell this pod's network yet (see DesiredStateInput.networkUnknown). */
  networkUnknown?: (uid: string) => boolean;
  /** Called with the refused attachment and its clashes (for Events). */
  onRefused?: (attachment: Attachment, clashes: AddressClash[]) => void;
}

/**
 * Refuses an attachment that brings an address a live pod of another network
 * already holds on this node: the kubelet's probes of either pod could be
 * delivered into the other's network. Throws AttachmentRefusedError, which
 * the CNI server turns into a refusal that fails the ADD (the runtime
 * retries, and the address manager picks another address). Refuses only on
 * what the agent knows: `network` is the attachment's (attachmentNetwork()),
 * and a holder whose network is unknown is no clash.
 */
export function refuseClashingAttachment(
  a: Attachment,
  network: PodNetwork,
  check: ClashCheck,
): void {
  const { pods, nodeNetworks, config, memo } = check;
  const placements: PodPlacement[] = [];
  for (const uid of pods.uids()) {
    try {
      const placed = placementOf(memo, pods.get(uid)!, config, nodeNetworks.get(uid));
      if (placed && !check.networkUnknown?.(uid)) placements.push(placed);
    } catch { /* a pod that cannot be evaluated is reported by the reconcile */ }
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
  log.warning(
    "Refused the CNI ADD of pod {pod} (network {network}): address {address} is held by pod {holder} of network {holderNetwork}",
    {
      pod: `${a.namespace}/${a.name}`,
      network: network.network || "(default)",
      address: clashes[0].address,
      holder: `${clashes[0].holder.namespace}/${clashes[0].holder.name}`,
      holderNetwork: clashes[0].holderNetwork.network || "(default)",
    },
  );
  callHook(() => check.onRefused?.(a, clashes));
  throw new AttachmentRefusedError(
    `Address ${
      clashes[0].address
    } is already used on this node by a pod of another network: the kubelet's probes could be delivered into the wrong network, so this attachment is refused; retry with another address (node-local pod addresses must be unique across networks)`,
  );
}
