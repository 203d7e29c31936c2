/**
 * The network of a pod at its CNI ADD, for the one-network-per-address rule:
 * the conf's when it names one, else the trusted annotations, from the pod
 * cache or, when the watch has not delivered them yet, from one GET of the
 * pod with a short deadline. The network plugin before Lace in the chain (or
 * its controller) has usually written them by then.
 */
import { getLogger } from "@logtape/logtape";
import { aboutPod, limitedLog } from "../../log/limiter.ts";
import type { Attachment } from "../../cni/protocol.ts";
import type { Pod } from "../../pods/pod.ts";
import type { PodLookup } from "../../pods/source.ts";
import { isObject } from "../../text/json.ts";
import { errorText } from "../../text/error.ts";
import { type Timers, within } from "../../time/timers.ts";
import {
  DEFAULT_NETWORK,
  type PodNetwork,
  podNetwork,
  type TargetOptions,
} from "../../rules/pod_network.ts";

const log = getLogger(["lace", "agent"]);

/**
 * How long an ADD waits for the pod from the API, at most. The plugin gives
 * the whole call 1 s by default (lib/cni/spec.ts) and fails open after it;
 * the agent still has to reconcile and write the pod's targets in that
 * second, which takes a few ms, and the API answers a GET of one pod in a few
 * ms when it is well. 300 ms leaves the rest of the second to the write and
 * to a busy node, and a slow API costs the ADD no more than that.
 */
export const ATTACH_LOOKUP_MS = 300;

/** Where the network of an attachment came from, or why it is unknown. */
export type AttachmentNetwork =
  | { network: PodNetwork; from: "conf" | "cache" | "api" | "pods" }
  | { network?: undefined; unknown: string };

export interface AttachmentNetworkInput {
  /** The pod as the cache merges it now, if any source but the CNI path knows it. */
  cached: Pod | undefined;
  /** Whether the cached view comes from the API (else from the pods directory). */
  cachedFromApi: boolean;
  lookup?: PodLookup;
  opts: TargetOptions;
  timers: Timers;
  /** The deadline of the lookup; ATTACH_LOOKUP_MS unless a test says otherwise. */
  lookupMs?: number;
}

function annotationsOf(pod: Pod): Record<string, unknown> {
  const meta: unknown = pod.metadata;
  return isObject<{ annotations?: unknown }>(meta) &&
      isObject<Record<string, unknown>>(meta.annotations)
    ? meta.annotations
    : {};
}

/**
 * The network the attachment's pod is in. A conf that names the network
 * decides. Else annotations that name one decide, from the cache or the API.
 * A pod without them is on the default network only when a source that
 * would show them says so: the API's answer, or the pods directory when
 * there is no API. Anything else (malformed annotations, the API slow, down
 * or naming another pod) is unknown: the caller refuses it then at an address
 * another pod holds, as it may be another network's.
 */
export async function attachmentNetwork(
  a: Attachment,
  input: AttachmentNetworkInput,
): Promise<AttachmentNetwork> {
  if (a.networkId !== undefined) {
    return { network: { network: a.network ?? "", networkId: a.networkId }, from: "conf" };
  }
  const { cached, lookup, opts } = input;
  if (cached) {
    const net = podNetwork(annotationsOf(cached), opts);
    if (typeof net === "string") return { unknown: net };
    if (net) return { network: net, from: "cache" };
    // No annotations in the cache: the watch may not have delivered the writer's yet.
    if (!lookup) {
      return input.cachedFromApi
        ? { unknown: "the cached pod has no network annotations and the API cannot be asked" }
        : { network: DEFAULT_NETWORK, from: "pods" };
    }
  }
  if (!lookup) return { unknown: "no pod source knows the pod yet" };
  const ms = input.lookupMs ?? ATTACH_LOOKUP_MS;
  let pod: Pod | undefined;
  try {
    pod = await within(input.timers, lookup.get(a.namespace, a.name), ms, "The pod's GET");
  } catch (error) {
    return { unknown: `reading the pod from the API failed: ${errorText(error)}` };
  }
  if (!pod) return { unknown: "the API has no pod by that name" };
  if (pod.metadata?.uid !== a.uid) {
    return { unknown: `the API's pod by that name is another one (uid ${pod.metadata?.uid})` };
  }
  const net = podNetwork(annotationsOf(pod), opts);
  if (typeof net === "string") return { unknown: net };
  return { network: net ?? DEFAULT_NETWORK, from: "api" };
}

/**
 * Logs an attachment whose network stays unknown: it is refused at an address another pod holds
 * (it may be another network's), attached elsewhere.
 */
export function logUnknownNetwork(a: Attachment, why: string): void {
  limitedLog(
    log,
    "warning",
    aboutPod("AttachNetworkUnknown", a),
    "CNI ADD of pod {pod}: its network is unknown ({why}); refused at an address another pod holds, else attached, and its addresses held against every network until its network is known",
    { pod: `${a.namespace}/${a.name}`, why },
  );
}
