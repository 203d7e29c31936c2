/**
 * Kubelet connects that found no target, as the agent handles them: the pod
 * ranges it wants in the datapath (the operator's --pod-cidrs and the
 * addresses of the pods it knows), and what a report becomes (a log line, a
 * Warning Event on the pod that owns the address, an entry in the recent
 * list `lace doctor` shows), each rate-limited per destination. Pure: the
 * clock comes in as a Timers.
 */
import { keyId, type ProbeKey } from "../probe/key.ts";
import { hostRange, type PodRange, rangeText } from "../net/cidr.ts";
import type { PodIdentity } from "../rules/pod_fields.ts";
import type { Timers } from "../time/timers.ts";
import type { UnmatchedView } from "../agent_api/views.ts";
import type { DesiredTarget } from "../rules/desired_target.ts";

/** The ranges the datapath should hold: `cidrs` (network 0) and each known pod address. */
export function desiredRanges(
  cidrs: readonly PodRange[],
  targets: readonly DesiredTarget[],
): PodRange[] {
  const byPrefix = new Map<string, PodRange>();
  for (const r of cidrs) byPrefix.set(rangeText(r), { ...r, networkId: 0 });
  for (const t of targets) {
    const r = hostRange(t.entry.key.address, t.entry.value.networkId);
    const had = byPrefix.get(rangeText(r));
    // An address two networks claim is counted under neither (network 0).
    byPrefix.set(rangeText(r), had && had.networkId !== r.networkId ? { ...r, networkId: 0 } : r);
  }
  return [...byPrefix.values()];
}

/** A pod the agent knows at an address, and its network. */
export interface AddressOwner {
  pod: PodIdentity;
  network: string;
}

/** Who owns each address, from the agent's targets. */
export function ownersByAddress(targets: readonly DesiredTarget[]): Map<string, AddressOwner> {
  const out = new Map<string, AddressOwner>();
  for (const t of targets) out.set(t.entry.key.address, { pod: t.pod, network: t.network });
  return out;
}

/**
 * A log line about one destination: `message` is the template, Lace's own text only (the
 * destination as Lace writes an address and port), and `values` fill it, so a pod's names are
 * logged (and escaped) as values, never read as a template (a network name may hold braces).
 */
export interface UnmatchedLog {
  message: string;
  values: { owner: string };
}

/** What the agent does about one report; each part is absent when rate-limited. */
export interface UnmatchedAction {
  log?: UnmatchedLog;
  event?: { pod: PodIdentity; message: string };
}

/** The message of the Warning Event on the pod that owns the destination. */
export function unmatchedMessage(key: ProbeKey): string {
  return `the kubelet connected to ${keyId(key)}, which is not a probe target of this pod: ` +
    "the probe cannot reach it (is the port in the pod's spec, with a Lace network annotation?)";
}

/**
 * Turns reports into actions, at most one per destination per `intervalMs`,
 * and keeps the most recent `keep` destinations for `lace doctor`.
 */
export class UnmatchedLedger {
  readonly #timers: Pick<Timers, "now">;
  readonly #intervalMs: number;
  readonly #keep: number;
  readonly #wallClock: () => number;
  readonly #recent = new Map<string, UnmatchedView & { actedAt: number }>();

  constructor(opts: {
    timers: Pick<Timers, "now">;
    intervalMs?: number;
    keep?: number;
    wallClock?: () => number;
  }) {
    this.#timers = opts.timers;
    this.#intervalMs = opts.intervalMs ?? 60_000;
    this.#keep = opts.keep ?? 50;
    this.#wallClock = opts.wallClock ?? Date.now;
  }

  /** Records one report; returns what to log and which Event to send, if anything. */
  record(key: ProbeKey, networkId: number, owner: AddressOwner | undefined): UnmatchedAction {
    const id = keyId(key);
    const now = this.#timers.now();
    const pod = owner ? `${owner.pod.namespace}/${owner.pod.name}` : undefined;
    const had = this.#recent.get(id);
    this.#recent.delete(id); // re-inserted last: the Map keeps recency order
    const entry = {
      family: key.family,
      address: key.address,
      port: key.port,
      networkId,
      ...(pod ? { pod } : {}),
      reports: (had?.reports ?? 0) + 1,
      lastSeen: this.#wallClock(),
      actedAt: had?.actedAt ?? -Infinity,
    };
    this.#recent.set(id, entry);
    while (this.#recent.size > this.#keep) this.#recent.delete(this.#recent.keys().next().value!);
    if (now - entry.actedAt < this.#intervalMs) return {};
    entry.actedAt = now;
    const where = pod ? `pod ${pod} (network ${owner!.network})` : "no pod this agent knows";
    return {
      log: {
        message: `Kubelet connect to ${id} matched no probe target; the address belongs to {owner}`,
        values: { owner: where },
      },
      ...(owner ? { event: { pod: owner.pod, message: unmatchedMessage(key) } } : {}),
    };
  }

  /** The most recent destinations, newest first. */
  recent(): UnmatchedView[] {
    return [...this.#recent.values()].reverse().map(({ actedAt: _, ...v }) => v);
  }
}
