/**
 * Telling operators and pod authors what went wrong with a pod's probes:
 * each problem is logged and handed to a hook (Events) once while it
 * persists, never once per reconcile, and again if it goes away and comes
 * back. The agent core finds the problems; this file only reports them.
 * A pod author decides how many problems their pods have (50 pods × 25 unresolvable probes were
 * 1250 lines at once), so the lines go through the log limiter by Event reason and namespace
 * (log/limiter.ts: 10 in full, then one summary a minute); the hooks (Events, metrics) get every
 * one.
 */
import { getLogger } from "@logtape/logtape";
import { aboutPod, limitedLog } from "../log/limiter.ts";
import { keyId } from "../probe/key.ts";
import type { Claim, Conflict } from "../rules/conflicts.ts";
import type { Unwritten } from "../rules/share.ts";
import type { NetworkMismatch } from "../rules/pod_network.ts";
import type { Skip } from "../rules/skip.ts";
import type { PodAt, SharedAddress } from "../rules/address_holders.ts";

const log = getLogger(["lace", "agent"]);

/** Where each kind of problem goes (Events in the agent); every hook is optional. */
export interface ProblemHooks {
  /** A problem with one pod's probes. */
  onSkip?: (skip: Skip) => void;
  /** A pod that gets no target for a conflicted key. */
  onConflict?: (conflict: Conflict, dropped: Claim) => void;
  /** A pod whose annotations disagree with the network the node attached it to. */
  onNetworkMismatch?: (mismatch: NetworkMismatch) => void;
  /** Some of a pod's targets are not in the map (cap, map full, write error). */
  onUnwritten?: (unwritten: Unwritten) => void;
  /** A pod that gets no target at an address another network's pod holds (--address-sharing=exclusive). */
  onAddressClash?: (shared: SharedAddress, pod: PodAt) => void;
}

/** What one reconcile's computation found. */
export interface Findings {
  skips: Skip[];
  conflicts: Conflict[];
  mismatches: NetworkMismatch[];
  unwritten: Unwritten[];
  /** Addresses pods of other networks hold that cost these pods their targets (exclusive only). */
  addressClashes?: SharedAddress[];
}

/** Calls a hook; a hook that throws is logged, never passed on. */
export function callHook(fn: () => void): void {
  try {
    fn();
  } catch (error) {
    log.error("Agent hook failed: {error}", { error });
  }
}

function podName(pod: { namespace: string; name: string }): string {
  return `${pod.namespace}/${pod.name}`;
}

/** Problems seen in the last round, by pod uid, to report each only when it is new. */
class Seen {
  #last = new Map<string, Set<string>>();
  #now = new Map<string, Set<string>>();

  /** Notes a problem of this round; true when the last round did not have it. */
  fresh(uid: string, id: string): boolean {
    let set = this.#now.get(uid);
    if (!set) this.#now.set(uid, set = new Set());
    set.add(id);
    return !this.#last.get(uid)?.has(id);
  }

  /** Ends the round: what was not seen in it is forgotten. */
  next(): void {
    this.#last = this.#now;
    this.#now = new Map();
  }
}

/**
 * Reports findings once while they persist. A pod's probes cannot change
 * during its life (the spec is immutable there), so "once per uid while it
 * persists" is once per pod generation. Findings of the computation and
 * write failures of the apply step are separate rounds.
 */
export class ProblemReporter {
  readonly #hooks: ProblemHooks;
  readonly #computed = new Seen();
  readonly #writes = new Seen();

  constructor(hooks: ProblemHooks) {
    this.#hooks = hooks;
  }

  /** Reports what a reconcile's computation found that the last one did not. */
  report(found: Findings): void {
    const seen = this.#computed;
    for (const skip of found.skips) {
      const id = `skip|${skip.reason}|${skip.container ?? ""}|${skip.probe ?? ""}|${skip.message}`;
      if (!seen.fresh(skip.pod.uid, id)) continue;
      limitedLog(log, "warning", aboutPod("ProbeIgnored", skip.pod), "Pod {pod}: {message}", {
        pod: podName(skip.pod),
        reason: skip.reason,
        message: skip.message,
      });
      callHook(() => this.#hooks.onSkip?.(skip));
    }
    for (const c of found.conflicts) {
      const pods = (claims: Claim[]) =>
        claims.map((d) => `${podName(d.pod)} (${d.network || "default"})`);
      for (const dropped of c.dropped) {
        const id = `conflict|${keyId(c.key)}|${c.policy}|${c.kept?.pod.uid ?? ""}`;
        if (!seen.fresh(dropped.pod.uid, id)) continue;
        limitedLog(
          log,
          "warning",
          aboutPod("ProbeTargetConflict", dropped.pod),
          "Conflict on {key} ({policy}): pod {pod} of network {network} gets no target; claimed by {claimants}, kept by {kept}",
          {
            key: keyId(c.key),
            policy: c.policy,
            pod: podName(dropped.pod),
            network: dropped.network || "(default)",
            claimants: pods(c.dropped),
            kept: c.kept ? pods([c.kept])[0] : "nobody",
          },
        );
        callHook(() => this.#hooks.onConflict?.(c, dropped));
      }
    }
    for (const m of found.mismatches) {
      const id = `mismatch|${m.node.networkId}|${m.node.network}|${m.annotated}`;
      if (!seen.fresh(m.pod.uid, id)) continue;
      limitedLog(
        log,
        "warning",
        aboutPod("NetworkAnnotationMismatch", m.pod),
        "Pod {pod}: its annotations say {annotated}, the node attached it to network {network} (id {networkId}); the node's network is used",
        {
          pod: podName(m.pod),
          annotated: m.annotated,
          network: m.node.network,
          networkId: m.node.networkId,
        },
      );
      callHook(() => this.#hooks.onNetworkMismatch?.(m));
    }
    for (const a of found.addressClashes ?? []) {
      const losers = a.holderWithdrawn ? [a.holder, ...a.peers, ...a.later] : a.later;
      for (const p of losers) {
        const id = `address|${a.address}|${a.holder.pod.uid}|${a.holderWithdrawn}`;
        if (!seen.fresh(p.pod.uid, id)) continue;
        limitedLog(
          log,
          "warning",
          aboutPod("AddressClash", p.pod),
          "Address {address} is held by pod {holder} of network {holderNetwork}; pod {pod} of network {network} gets no target at it (--address-sharing=exclusive)",
          {
            address: a.address,
            holder: podName(a.holder.pod),
            holderNetwork: a.holder.network.network || "(default)",
            pod: podName(p.pod),
            network: p.network.network || "(default)",
            later: a.later.map((l) => podName(l.pod)),
          },
        );
        callHook(() => this.#hooks.onAddressClash?.(a, p));
      }
    }
    this.#unwritten(seen, found.unwritten);
    seen.next();
  }

  /** Reports the pods whose targets the last apply could not write, when new. */
  reportWriteFailures(unwritten: Unwritten[]): void {
    this.#unwritten(this.#writes, unwritten);
    this.#writes.next();
  }

  #unwritten(seen: Seen, unwritten: Unwritten[]): void {
    for (const u of unwritten) {
      if (!seen.fresh(u.pod.uid, `unwritten|${u.reason}`)) continue;
      limitedLog(
        log,
        "warning",
        aboutPod("ProbeTargetsNotWritten", u.pod),
        "Pod {pod}: {count} of {wanted} probe targets not written ({reason}): {message}",
        {
          pod: podName(u.pod),
          count: u.count,
          wanted: u.wanted,
          reason: u.reason,
          message: u.message,
        },
      );
      callHook(() => this.#hooks.onUnwritten?.(u));
    }
  }
}
