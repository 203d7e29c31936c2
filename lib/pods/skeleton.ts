/**
 * What the agent keeps of a pod refused as too large: who it is and where it sits, never its
 * probes. Such a pod gets no targets, but it still holds its addresses on the node; forgetting
 * them would let a pod of another network take the same address unrefused and have the
 * kubelet's probes of the refused pod (paths and headers its author chose) tagged into that
 * other network. Every field is bounded and validated here, so the skeleton stays small
 * (SKELETON_MAX_BYTES) whatever the pod holds: the size cap exists because any tenant may bind
 * any number of pods to a node.
 */
import { canonicalAddress } from "../net/address.ts";
import { isObject } from "../text/json.ts";
import { networkNameProblem } from "../probe/network_name.ts";

/**
 * The most addresses a skeleton keeps: the API server allows one per family (dual stack), and
 * a few more leave room for any source that lists them again.
 */
export const SKELETON_MAX_IPS = 4;

/** The longest phase kept (the longest real one, `Succeeded`, has 9 characters). */
const MAX_PHASE = 32;
/** The longest creationTimestamp kept (RFC 3339 with nanoseconds and an offset is 35). */
const MAX_TIMESTAMP = 64;
/** The longest resourceVersion or nodeName kept (a DNS subdomain's limit). */
const MAX_IDENTITY = 253;

/**
 * The largest JSON a skeleton makes, in UTF-16 code units, of a pod the API server accepted
 * (name, namespace and uid within its limits): those, a resourceVersion and a nodeName of 253
 * characters, a timestamp, a phase, SKELETON_MAX_IPS IPv6 addresses and two network
 * annotations of 253 characters (two code units each at worst), with their keys as the caller
 * passes them (Lace's own, a few tens of characters) and JSON's punctuation: a fraction of
 * what a pod kept at the cap (MAX_POD_BYTES) takes.
 */
export const SKELETON_MAX_BYTES = 6 * 253 + MAX_TIMESTAMP + MAX_PHASE + SKELETON_MAX_IPS * 48 +
  2 * (2 * 253 + 128) + 256;

type Json = Record<string, unknown>;

/** `value` when it is a string of at most `max` characters (UTF-16 units). */
function bounded(value: unknown, max: number): string | undefined {
  return typeof value === "string" && value.length <= max ? value : undefined;
}

/** A timestamp as the JSON round trip of a kept pod writes it (a Date from the informer). */
function timestamp(value: unknown): string | undefined {
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? undefined : value.toJSON();
  return bounded(value, MAX_TIMESTAMP);
}

/**
 * The pod's addresses, canonical, at most SKELETON_MAX_IPS: status.podIPs (of which only the
 * first few are read), or podIP when there is no list. What does not parse is dropped; what is left is judged by
 * the rules as any pod's addresses are (special addresses set aside there).
 */
function addresses(status: unknown): { ip: string }[] {
  if (!isObject(status)) return [];
  const raw: unknown[] = Array.isArray(status.podIPs) && status.podIPs.length > 0
    ? status.podIPs.slice(0, 4 * SKELETON_MAX_IPS).map((item) => isObject(item) ? item.ip : item)
    : [status.podIP];
  const out: { ip: string }[] = [];
  for (const ip of raw) {
    if (out.length === SKELETON_MAX_IPS) break;
    // An address is at most 45 characters (an IPv6 address with an IPv4 tail): longer text is
    // junk, and never handed to the parser.
    if (typeof ip !== "string" || ip.length > 64) continue;
    try {
      const { address } = canonicalAddress(ip);
      if (!out.some((o) => o.ip === address)) out.push({ ip: address });
    } catch { /* not an address: dropped */ }
  }
  return out;
}

/**
 * The kept annotations (`keys`, Lace's network annotations), each only when its value is a
 * network name by networkNameProblem's rule (1..253 printable characters, which an id in
 * decimal is too; the id's own rule is podNetwork's, applied where the network is read). A
 * value that breaks the rule is kept as "" so that the network reads as malformed, hence
 * unknown, which makes the pod hold its addresses against every network: never the default
 * network merely because its annotation was dropped. Without `keys` none is kept.
 */
function annotations(value: unknown, keys: readonly string[] | undefined): Json | undefined {
  if (keys === undefined) return undefined;
  const all = isObject(value) ? value : {};
  const out: Json = {};
  for (const k of keys) {
    if (!Object.hasOwn(all, k)) continue;
    out[k] = networkNameProblem(all[k]) === null ? all[k] : "";
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/**
 * The skeleton of a pod refused as too large: uid, name, namespace, resourceVersion and
 * creationTimestamp, spec.nodeName and hostNetwork, status.phase and status.podIPs, and the
 * network annotations (`keys`), each bounded and validated as above; no containers. Plain
 * JSON, not yet frozen. `namespace` is the one normalisePod settled on.
 */
export function refusedSkeleton(
  input: Json,
  namespace: string,
  keys: readonly string[] | undefined,
): Json {
  const meta = isObject(input.metadata) ? input.metadata : {};
  // normalisePod checked that name and uid are strings; the API server bounds them and the
  // namespace (253, 36 and 63 characters), and they are who the pod is, so never cut.
  const metadata: Json = { name: meta.name, namespace, uid: meta.uid };
  const version = bounded(meta.resourceVersion, MAX_IDENTITY);
  if (version !== undefined) metadata.resourceVersion = version;
  const created = timestamp(meta.creationTimestamp);
  if (created !== undefined) metadata.creationTimestamp = created;
  const kept = annotations(meta.annotations, keys);
  if (kept) metadata.annotations = kept;
  const specIn = isObject(input.spec) ? input.spec : {};
  const spec: Json = {};
  const nodeName = bounded(specIn.nodeName, MAX_IDENTITY);
  if (nodeName !== undefined) spec.nodeName = nodeName;
  if (typeof specIn.hostNetwork === "boolean") spec.hostNetwork = specIn.hostNetwork;
  spec.containers = [];
  const status: Json = {};
  const phase = isObject(input.status) ? bounded(input.status.phase, MAX_PHASE) : undefined;
  if (phase !== undefined) status.phase = phase;
  const ips = addresses(input.status);
  if (ips.length > 0) status.podIPs = ips;
  const out: Json = { metadata, spec };
  if (Object.keys(status).length > 0) out.status = status;
  return out;
}
