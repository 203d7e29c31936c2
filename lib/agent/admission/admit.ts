/**
 * The one decision on a CNI ADD: admitted, with the network learnt for it, or refused with
 * AttachmentRefusedError (the CNI server fails the ADD with its reason, and the runtime retries).
 * Every refusal is here, in the order the agent checks them: the node's own addresses, a second
 * Lace network for the pod, then under one network per address its network and the addresses
 * other networks' pods hold, and the pod ranges for a pod of a Lace network.
 */
import type { Attachment, AttachmentRef } from "../../cni/protocol.ts";
import type { AddressClash } from "../../rules/conflicts.ts";
import type { PodCache } from "../../pods/cache.ts";
import type { PodLookup } from "../../pods/source.ts";
import type { PodRangeSet } from "../../net/cidr.ts";
import { type PodNetwork, type TargetOptions, UNKNOWN_NETWORK } from "../../rules/pod_network.ts";
import type { RulesMemo } from "../../rules/address_placement.ts";
import { type AddressSharing, addressSharingPolicy } from "../../rules/address_sharing.ts";
import type { Timers } from "../../time/timers.ts";
import { CNI_SOURCE, type CniAttachments } from "./attachments.ts";
import { refuseHostAddress, refuseOutsidePodRanges, refuseSecondNetwork } from "./refusals.ts";
import { refuseClashingAttachment } from "./clashes.ts";
import { attachmentNetwork, logUnknownNetwork } from "./network.ts";

/** The Events' hooks of the refusals, each called with the refused attachment. */
export interface AdmissionHooks {
  /** Its address is held by a pod of another network. */
  onAttachRefused?: (
    attachment: Attachment,
    clashes: AddressClash[],
    networkUnknown: boolean,
  ) => void;
  /** It brings one of the node's own addresses. */
  onHostAddressRefused?: (attachment: Attachment, address: string) => void;
  /** It brings an address outside every --pod-cidrs range. */
  onOutsidePodRangesRefused?: (attachment: Attachment, address: string) => void;
  /** It attaches the pod to a second Lace network. */
  onSecondNetworkRefused?: (attachment: Attachment) => void;
}

/** What an ADD is checked against: the agent's pods and CNI records, as they are now. */
export interface Admission {
  config: TargetOptions & { addressSharing: AddressSharing };
  pods: PodCache;
  attachments: CniAttachments;
  /** The node's own addresses, read for this ADD (none: not checked). */
  hostAddresses: ReadonlySet<string> | undefined;
  /** The operator's pod ranges (--pod-cidrs; empty: not checked). */
  podRanges: PodRangeSet;
  /** The reconcile's memo: the ADD places pods by the reconcile's rule, at a lookup per pod. */
  memo: RulesMemo;
  /** Reads the pod from the API where the cache cannot tell its network in time. */
  podLookup?: PodLookup;
  timers: Timers;
  hooks: AdmissionHooks;
}

/**
 * Admits the attachment `a` (interface `ref`) or throws AttachmentRefusedError with the reason.
 * Returns the network learnt for the pod from the cache or the API (undefined when the conf named
 * it, or nothing told it), to be recorded with the attachment.
 */
export async function admitAttachment(
  a: Attachment,
  ref: AttachmentRef | undefined,
  at: Admission,
): Promise<{ learnt?: PodNetwork }> {
  const { attachments, hooks } = at;
  refuseHostAddress(a, at.hostAddresses, hooks.onHostAddressRefused);
  const refused = attachments.refusedNetwork(a, ref);
  if (refused) refuseSecondNetwork(a, ref, refused, hooks.onSecondNetworkRefused);
  // Only a Lace network's pod can have targets, and the pod ranges are the Lace networks': a
  // pod of the default network (its own ranges) is not held to them. Where the network is
  // learnt later, the reconcile gives such a pod no targets outside the ranges.
  const outsideRanges = (network: PodNetwork | undefined) => {
    if ((network?.networkId ?? 0) > 0) {
      refuseOutsidePodRanges(a, at.podRanges, hooks.onOutsidePodRangesRefused);
    }
  };
  const named = a.network !== undefined && a.networkId !== undefined
    ? { network: a.network, networkId: a.networkId }
    : attachments.nodeNetworks.get(a.uid);
  if (!addressSharingPolicy(at.config.addressSharing).refusesClashAtAdd) {
    outsideRanges(named);
    return {};
  }
  const sources = at.pods.sourcesOf(a.uid).filter((s) => s !== CNI_SOURCE);
  const found = await attachmentNetwork(a, {
    // holderView, not get: get throws for a pod refused as too large, and that pod's own
    // ADD must be checked like any (it would otherwise take another network's address).
    cached: sources.length ? at.pods.holderView(a.uid) : undefined,
    cachedFromApi: sources[0] === "api",
    lookup: at.podLookup,
    opts: at.config,
    timers: at.timers,
  });
  outsideRanges(named ?? found.network);
  // An ADD whose network is unknown may be another network's than any holder's: it is
  // refused at an address another pod holds (fail closed), and attached elsewhere.
  if (!found.network) logUnknownNetwork(a, found.unknown);
  refuseClashingAttachment(a, found.network ?? UNKNOWN_NETWORK, {
    pods: at.pods,
    nodeNetworks: attachments.nodeNetworks,
    config: at.config,
    memo: at.memo,
    networkUnknown: attachments.networkUnknown,
    learntNetwork: attachments.learntNetwork,
    attachedAddresses: (uid) => attachments.interfaceAddresses(uid),
    onRefused: hooks.onAttachRefused,
  });
  return found.network && found.from !== "conf" ? { learnt: found.network } : {};
}
