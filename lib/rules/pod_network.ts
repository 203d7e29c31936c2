/**
 * A pod's network: the Lace network named by its annotations (or given by the
 * node), or the default network of pods without one.
 */
import { networkLabel, networkNameProblem, quotedAtMost80 } from "../probe/network_name.ts";
import type { PodIdentity } from "./pod_fields.ts";

/** A Lace network: its name and its id (1..65535), the id going into the mark. */
export interface PodNetwork {
  network: string;
  networkId: number;
}

/**
 * The pod's annotations name another network than the node attached it to
 * (or a malformed one): the node's network is used, and this is reported.
 */
export interface NetworkMismatch {
  pod: PodIdentity;
  /** The network the node attached the pod to, which its targets get. */
  node: PodNetwork;
  /** What the annotations say, for the report. */
  annotated: string;
}

/**
 * The host-reachable default network of pods without a Lace network: never in
 * a mark, but a network all the same when two pods claim one address.
 */
export const DEFAULT_NETWORK: Readonly<PodNetwork> = { network: "", networkId: 0 };

/**
 * The network of a pod that holds its addresses against every network: a pod whose network
 * nothing tells, the node's attachment nor valid annotations (malformed ones, a pod known from
 * the CNI path alone, one refused as too large or that could not be evaluated). It gets no
 * targets, and at its addresses every other pod counts as of
 * another network (fail closed). Its id is no real network's (those are 0..65535) and its name
 * no real network's either (a network name has no spaces); it is never in a mark.
 */
export const UNKNOWN_NETWORK: Readonly<PodNetwork> = Object.freeze({
  network: "(unknown network)",
  networkId: -1,
});

/**
 * The annotation keys that name a pod's network and its id, and whether the
 * ports of lifecycle hooks are targets (absent: they are). The agent hands
 * the rules its whole Config, so `lifecycleHooks` arrives from there.
 */
export interface TargetOptions {
  networkAnnotation: string;
  networkIdAnnotation: string;
  lifecycleHooks?: boolean;
}

/**
 * Parses the network annotations. Both absent: the pod is on the host-reachable
 * default network (null, not a problem). Lace writes both together, so one
 * without the other, an id that is not decimal 1..65535, or a name that is not
 * 1..253 printable characters without spaces (networkNameProblem), is malformed.
 */
export function podNetwork(
  annotations: Record<string, unknown>,
  opts: TargetOptions,
): PodNetwork | null | string {
  const name = annotations[opts.networkAnnotation];
  const id = annotations[opts.networkIdAnnotation];
  if (name === undefined && id === undefined) return null;
  if (typeof id !== "string") {
    return `Annotation ${opts.networkIdAnnotation} is missing or not a string while ${opts.networkAnnotation} is set: the pod's network is unknown`;
  }
  if (typeof name !== "string" || name === "") {
    return `Annotation ${opts.networkAnnotation} is missing or empty while ${opts.networkIdAnnotation} is ${
      quotedAtMost80(id)
    }: the pod's network is unknown`;
  }
  const bad = networkNameProblem(name);
  if (bad) return `Annotation ${opts.networkAnnotation} ${bad}`;
  const networkId = /^[0-9]{1,5}$/.test(id) ? Number(id) : NaN;
  if (!(networkId >= 1 && networkId <= 65535)) {
    return `Annotation ${opts.networkIdAnnotation} must be a decimal number 1..65535: ${
      quotedAtMost80(id)
    }`;
  }
  return { network: name, networkId };
}

/**
 * The Event message for a pod whose annotations name another network than the node attached it
 * to: both networks, the node's one used.
 */
export function networkMismatchMessage(m: NetworkMismatch): string {
  return `The pod's annotations say ${m.annotated}, but the node attached it to ${
    networkLabel(m.node.network)
  } (id ${m.node.networkId}): its probe targets use the node's network and the annotations are ignored`;
}

/** Whether a parsed annotation (or its error message) names exactly the network `b`. */
export function sameNetwork(a: PodNetwork | string, b: PodNetwork): boolean {
  return typeof a !== "string" && a.networkId === b.networkId && a.network === b.network;
}
