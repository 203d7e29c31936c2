/**
 * The CNI ADD's refusals that need no pod's network: an address that is one of the node's own or
 * outside every pod range (--pod-cidrs), and a second Lace network for one pod. Each logs, calls
 * its hook (for Events) and throws AttachmentRefusedError; the address clashes between networks
 * are clashes.ts's.
 */
import { getLogger } from "@logtape/logtape";
import { type Attachment, type AttachmentRef, AttachmentRefusedError } from "../../cni/protocol.ts";
import { canonicalAddress } from "../../net/address.ts";
import { HOST_ADDRESS_REFUSAL, OUTSIDE_POD_RANGES_REFUSAL } from "../../rules/desired_state.ts";
import type { PodRangeSet } from "../../net/cidr.ts";
import { callHook } from "../problems.ts";
import { aboutPod, limitedLog } from "../../log/limiter.ts";

const log = getLogger(["lace", "agent"]);

/** Why an attachment to a second Lace network is refused (also the pod's Event; names no other pod). */
export const SECOND_NETWORK_REFUSAL =
  "The CNI ADD of this interface was refused: it names a Lace network other than the one the node attached this pod's eth0 to, and the kubelet's probes of a pod can be delivered into one network only; attach the pod's further interfaces with configurations that name no Lace network";

/**
 * Refuses an attachment bringing one of the node's own addresses (`host`), under both sharing
 * modes: the kubelet probes the node's host-network pods there and cannot tell their probes from
 * this pod's, which would be tagged into its network.
 */
export function refuseHostAddress(
  a: Attachment,
  host: ReadonlySet<string> | undefined,
  onRefused?: (attachment: Attachment, address: string) => void,
): void {
  if (!host?.size) return;
  refuseAddress(a, (address) => host.has(address), HOST_ADDRESS_REFUSAL, onRefused);
}

/**
 * Refuses an attachment bringing an address outside every one of the operator's pod ranges
 * (`ranges`, --pod-cidrs; none: no refusal), under both sharing modes: such an address is no
 * pod's, and may be one the kubelet's cgroup itself connects to (the API server, a registry),
 * whose connections on the pod's probe ports would be tagged into the pod's network.
 */
export function refuseOutsidePodRanges(
  a: Attachment,
  ranges: PodRangeSet,
  onRefused?: (attachment: Attachment, address: string) => void,
): void {
  if (ranges.ranges.length === 0) return;
  refuseAddress(a, (address) => !ranges.has(address), OUTSIDE_POD_RANGES_REFUSAL, onRefused);
}

/** Refuses `a` at its first address (canonical) that `refused` holds no pod's: `why` follows it. */
function refuseAddress(
  a: Attachment,
  refused: (address: string) => boolean,
  why: string,
  onRefused?: (attachment: Attachment, address: string) => void,
): void {
  for (const ip of a.ips) {
    let address: string;
    try {
      address = canonicalAddress(ip).address;
    } catch {
      continue;
    }
    if (!refused(address)) continue;
    limitedLog(
      log,
      "warning",
      aboutPod("AttachRefused", a),
      "Refused the CNI ADD of pod {pod}: address {address} {why}",
      { pod: `${a.namespace}/${a.name}`, address, why },
    );
    callHook(() => onRefused?.(a, address));
    throw new AttachmentRefusedError(`Address ${address} ${why}`);
  }
}

/** Refuses an attachment to a second Lace network of its pod (`why`: CniAttachments.refusedNetwork). */
export function refuseSecondNetwork(
  a: Attachment,
  ref: AttachmentRef | undefined,
  why: string,
  onRefused?: (attachment: Attachment) => void,
): never {
  limitedLog(
    log,
    "warning",
    aboutPod("AttachRefused", a),
    "Refused the CNI ADD of interface {ifname} of pod {pod} in network {network}: {why}, and the kubelet's probes of a pod go into one network",
    {
      ifname: ref?.ifname ?? "",
      pod: `${a.namespace}/${a.name}`,
      network: a.network,
      why,
    },
  );
  callHook(() => onRefused?.(a));
  throw new AttachmentRefusedError(SECOND_NETWORK_REFUSAL);
}
