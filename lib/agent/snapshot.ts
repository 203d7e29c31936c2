/**
 * What the agent publishes of its last decision, for the HTTP endpoint, the
 * CLI, metrics and the CNI path: built from each reconcile's desired state,
 * then completed by the apply's report (write failures, the first full list).
 * Pure: the core (core.ts) holds one and replaces it; readers never change it.
 */
import type { Conflict } from "../rules/conflicts.ts";
import type { Skip } from "../rules/skip.ts";
import type { NetworkMismatch } from "../rules/pod_network.ts";
import { failedWrites, type Unwritten } from "../rules/share.ts";
import type { DesiredState, HostHeldAddress } from "../rules/desired_state.ts";
import type { DesiredTarget } from "../rules/desired_target.ts";
import type { AddressSharing } from "../rules/address_sharing.ts";
import type { SharedAddress } from "../rules/address_holders.ts";
import type { ReconcileReport } from "./reconcile.ts";

export interface AgentSnapshot {
  targets: DesiredTarget[];
  conflicts: Conflict[];
  skips: Skip[];
  /** Pods whose annotations disagree with the network the node attached them to. */
  mismatches: NetworkMismatch[];
  /**
   * Addresses live pods of two or more networks hold on this node: under
   * `exclusive` clashes (the later pods get no targets there), under `shared`
   * the addresses shared.
   */
  sharedAddresses: SharedAddress[];
  /** Pods at the node's own addresses: they get no targets there. */
  hostHeld: HostHeldAddress[];
  /** Pods at addresses outside the operator's pod ranges (--pod-cidrs): no targets there. */
  outsidePodRanges: HostHeldAddress[];
  /** The policy in force (--address-sharing). */
  addressSharing: AddressSharing;
  /**
   * Pods some of whose targets are not in the map: over the per-pod cap or
   * beyond their fair share of a full map (from the computation), or whose
   * writes failed in the last apply.
   */
  unwritten: Unwritten[];
  /** Every pod source has delivered its first full list. */
  synced: boolean;
  /** A reconcile with deletes allowed has completed without errors. */
  firstFullListApplied: boolean;
  counts: { pods: number; targets: number; conflicts: number; skips: number; mismatches: number };
  lastReconcile?: ReconcileReport;
}

/** The snapshot before the first reconcile: nothing decided, nothing synced. */
export function emptySnapshot(addressSharing: AddressSharing): AgentSnapshot {
  return {
    targets: [],
    conflicts: [],
    skips: [],
    mismatches: [],
    sharedAddresses: [],
    hostHeld: [],
    outsidePodRanges: [],
    addressSharing,
    unwritten: [],
    synced: false,
    firstFullListApplied: false,
    counts: { pods: 0, targets: 0, conflicts: 0, skips: 0, mismatches: 0 },
  };
}

/**
 * `previous` with what a reconcile computed for `pods` pods: the targets and
 * every reason some got none. What the apply reports (the first full list,
 * the last report) is kept from `previous` until recordReport().
 */
export function snapshotOfState(
  previous: AgentSnapshot,
  state: DesiredState,
  pods: number,
  synced: boolean,
): AgentSnapshot {
  const { views, conflicts, skips, mismatches, unwritten } = state;
  return {
    ...previous,
    targets: views,
    conflicts,
    skips,
    mismatches,
    sharedAddresses: state.sharedAddresses,
    hostHeld: state.hostHeld,
    outsidePodRanges: state.outsidePodRanges,
    unwritten,
    synced,
    counts: {
      pods,
      targets: views.length,
      conflicts: conflicts.length,
      skips: skips.length,
      mismatches: mismatches.length,
    },
  };
}

/**
 * Completes `snapshot` in place with an apply's `report`: the first clean
 * apply with deletes allowed marks the first full list applied (`firstFullList`
 * true that once), and the pods whose writes failed join the computation's
 * `unwrittenByRules`. Returns those write failures (none when the run failed).
 */
export function recordReport(
  snapshot: AgentSnapshot,
  report: ReconcileReport,
  unwrittenByRules: Unwritten[],
): { firstFullList: boolean; failures?: Unwritten[] } {
  const clean = !report.error && report.ops.every((o) => o.ok);
  const firstFullList = report.allowDelete && clean && !snapshot.firstFullListApplied;
  if (firstFullList) snapshot.firstFullListApplied = true;
  snapshot.lastReconcile = report;
  if (report.error) return { firstFullList };
  const failures = failedWrites(
    report.ops.filter((o) => o.op === "put" && !o.ok),
    snapshot.targets.map((t) => ({ key: t.entry.key, pod: t.pod })),
  );
  snapshot.unwritten = [...unwrittenByRules, ...failures];
  return { firstFullList, failures };
}
