/**
 * The agent's side of kubelet connects that found no target, wired to the
 * datapath: keeps the pod ranges trie in step with --pod-cidrs and the pods
 * the agent knows (after each reconcile, and at each drain), drains the
 * report ring buffer every 5 s (a poll with no wait, on this thread: one
 * wake-up per drain; the counts are the kernel's, exact between drains), and logs, sends Events and keeps the recent
 * list through an UnmatchedLedger. Per-network counts for the metrics.
 */
import { getLogger } from "@logtape/logtape";
import type { UnmatchedMaps } from "../datapath/unmatched_maps.ts";
import type { RingBufferReader } from "../libbpf/mod.ts";
import { type PodRange, rangeId } from "../net/cidr.ts";
import { type EventSink, podObjectRef } from "../kube/event_sink.ts";
import { realTimers } from "../time/timers.ts";
import { aboutPod, limitedLog } from "../log/limiter.ts";
import type { AgentSnapshot } from "./snapshot.ts";
import { type AddressOwner, desiredRanges, ownersByAddress, UnmatchedLedger } from "./unmatched.ts";
import type { UnmatchedView } from "../agent_api/views.ts";

const log = getLogger(["lace", "agent"]);

/** The network id of ranges the operator gave without a network (--pod-cidrs). */
export const UNKNOWN_NETWORK_ID = 0;

/**
 * Kubelet connects into one network, for lace_probe_connects_total and
 * lace_probe_unmatched_total. By id, never by name: these series are served on
 * the node's IP, and a network's name is a tenant's.
 */
export interface NetworkConnects {
  networkId: number;
  connects: bigint;
  unmatched: bigint;
}

export class UnmatchedWatch {
  readonly #maps: UnmatchedMaps;
  readonly #cidrs: readonly PodRange[];
  readonly #view: () => Readonly<AgentSnapshot>;
  readonly #events: EventSink;
  readonly #ledger = new UnmatchedLedger({ timers: realTimers });
  readonly #reader: RingBufferReader;
  readonly #intervalMs: number;
  #applied = "";
  /** The targets list the trie was last written from (the core replaces it on each change). */
  #appliedTargets: unknown;
  #owners: Map<string, AddressOwner> | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(opts: {
    maps: UnmatchedMaps;
    cidrs: readonly PodRange[];
    view: () => Readonly<AgentSnapshot>;
    events: EventSink;
    intervalMs?: number;
  }) {
    this.#maps = opts.maps;
    this.#cidrs = opts.cidrs;
    this.#view = opts.view;
    this.#events = opts.events;
    this.#intervalMs = opts.intervalMs ?? 5000;
    this.#reader = this.#maps.reportReader((report) => {
      // Built once per drain, only when there is a report.
      this.#owners ??= ownersByAddress(this.#view().targets);
      const owner = this.#owners.get(report.key.address);
      const action = this.#ledger.record(report.key, report.networkId, owner);
      if (action.log) {
        // One line per destination a minute, but a tenant's pods name the destinations.
        const key = owner
          ? aboutPod("ProbeTargetMissed", owner.pod)
          : { reason: "ProbeTargetMissed", namespace: "", subject: "an address of no pod" };
        limitedLog(log, "warning", key, action.log.message, action.log.values);
      }
      if (action.event) {
        this.#events.warn(
          podObjectRef(action.event.pod),
          "ProbeTargetMissed",
          action.event.message,
        );
      }
    }, (error) =>
      log.warn("Skipping an undecodable unmatched-connect report: {error}", {
        error: String(error),
      }));
  }

  /** Starts the periodic sync and drain; the first runs now. */
  start(): void {
    this.tick();
    this.#timer = setInterval(() => this.tick(), this.#intervalMs);
  }

  /**
   * Writes the pod ranges when the agent's targets changed them. An unchanged
   * targets list (the same array: the core makes a new one per change) is not
   * looked at again: at a full map, working the ranges out holds the agent's
   * thread for a long stretch, and the sync runs every few seconds.
   */
  syncRanges(): void {
    try {
      const targets = this.#view().targets;
      if (targets === this.#appliedTargets) return;
      const want = desiredRanges(this.#cidrs, targets);
      const id = want.map(rangeId).join(",");
      if (id !== this.#applied) {
        const done = this.#maps.syncRanges(want);
        this.#applied = id;
        log.debug("Pod ranges: {put} written, {removed} removed", done);
      }
      this.#appliedTargets = targets;
    } catch (error) {
      log.warn("Writing the pod ranges failed: {error}", { error: String(error) });
    }
  }

  /** Writes the pod ranges when they changed, then hands every report ready now to the ledger. */
  tick(): void {
    this.syncRanges();
    try {
      this.#owners = undefined;
      this.#reader.consume();
    } catch (error) {
      log.warn("Reading unmatched kubelet connects failed: {error}", { error: String(error) });
    }
  }

  /** The most recent unmatched destinations, newest first (for `lace doctor`). */
  recent(): UnmatchedView[] {
    return this.#ledger.recent();
  }

  /** Connects per network the agent knows (and the operator's ranges, as id 0). */
  networkConnects(): NetworkConnects[] {
    const ids = new Set<number>([UNKNOWN_NETWORK_ID]);
    for (const t of this.#view().targets) ids.add(t.entry.value.networkId);
    return [...this.#maps.networkCounts(ids)]
      .filter(([id, c]) => id !== UNKNOWN_NETWORK_ID || c.connects > 0n)
      .map(([networkId, c]) => ({ networkId, ...c }));
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
    this.#reader.close();
  }
}
