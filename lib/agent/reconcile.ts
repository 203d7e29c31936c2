/**
 * Keeping the probe map in sync: a pure diff between the desired entries and
 * what the store holds, and the step that applies it. When it runs (gathered
 * triggers, periodic resync, retry with backoff) is the scheduler's business
 * (scheduler.ts).
 */
import { getLogger } from "@logtape/logtape";
import { keyId, type ProbeEntry, type ProbeKey, type ProbeStore } from "../probe/key.ts";
import { errorText } from "../text/error.ts";

const log = getLogger(["lace", "reconcile"]);

/**
 * The minimal operations that turn `current` into `desired`: a put where an
 * entry is missing or its value differs, a remove where the store holds a key
 * nobody wants, and removes only when `allowDelete` (not before the first full
 * pod list, so a restart never empties the map), except for the `withdraw`
 * keys and the keys at a `withdrawAt` address, which leave the map at once (a
 * key that must not be tagged for anyone). Sorted by key for stable logs.
 */
export function diffTargets(
  desired: Map<string, ProbeEntry>,
  current: ProbeEntry[],
  opts: { allowDelete: boolean; withdraw?: ProbeKey[]; withdrawAt?: ReadonlySet<string> },
): { put: ProbeEntry[]; remove: ProbeKey[] } {
  const have = new Map<string, ProbeEntry>();
  for (const entry of current) have.set(keyId(entry.key), entry);
  // Kept with their ids, so sorting compares strings already made (not two keyIds per compare).
  const put: [string, ProbeEntry][] = [];
  const remove: [string, ProbeKey][] = [];
  for (const [id, want] of desired) {
    const got = have.get(id);
    if (
      !got || got.value.mark !== want.value.mark || got.value.networkId !== want.value.networkId
    ) {
      put.push([id, want]);
    }
  }
  if (opts.allowDelete) {
    for (const [id, got] of have) if (!desired.has(id)) remove.push([id, got.key]);
  } else {
    for (const key of opts.withdraw ?? []) {
      const id = keyId(key);
      const got = have.get(id);
      if (got && !desired.has(id)) remove.push([id, got.key]);
    }
    if (opts.withdrawAt?.size) {
      const listed = new Set(remove.map(([id]) => id));
      for (const [id, got] of have) {
        if (opts.withdrawAt.has(got.key.address) && !desired.has(id) && !listed.has(id)) {
          remove.push([id, got.key]);
        }
      }
    }
  }
  const byId = (a: [string, unknown], b: [string, unknown]) => (a[0] < b[0] ? -1 : 1);
  return { put: put.sort(byId).map(([, e]) => e), remove: remove.sort(byId).map(([, k]) => k) };
}

/** What one reconcile should reach; computed afresh for every run. */
export interface ReconcileInput {
  desired: Map<string, ProbeEntry>;
  allowDelete: boolean;
  /** Keys that leave the map even while deletes are not allowed yet. */
  withdraw?: ProbeKey[];
  /** Canonical addresses whose unwanted keys leave the map even while deletes are not allowed yet. */
  withdrawAt?: ReadonlySet<string>;
  conflicts?: number;
  skips?: number;
}

export interface OpResult {
  op: "put" | "remove";
  key: ProbeKey;
  ok: boolean;
  error?: string;
  /** The errno name of a failed BPF call (E2BIG: the map is full). */
  code?: string;
}

/** The outcome of one run, for logs and metrics. */
export interface ReconcileReport {
  reason: string;
  durationMs: number;
  ops: OpResult[];
  allowDelete: boolean;
  desired: number;
  conflicts: number;
  skips: number;
  /** Set when the run failed as a whole (computing the input, reading the store). */
  error?: string;
}

/** Told every reconcile's report (for metrics). */
export interface ReconcileObserver {
  onReconcile?(report: ReconcileReport): void;
}

/** Whether a run needs a retry: it failed as a whole, or an op did. */
export function reconcileFailed(report: ReconcileReport): boolean {
  return report.error !== undefined || report.ops.some((o) => !o.ok);
}

/**
 * One reconcile, the step the agent's scheduler runs: computes what the map
 * should hold, reads what it holds (the kernel map, not memory, is the
 * truth), and applies the difference op by op, so one failed op does not
 * stop the others. Never throws: failures are in the report.
 */
export async function reconcile(
  reason: string,
  store: ProbeStore,
  compute: () => ReconcileInput | Promise<ReconcileInput>,
  now: () => number,
): Promise<ReconcileReport> {
  const started = now();
  const report: ReconcileReport = {
    reason,
    durationMs: 0,
    ops: [],
    allowDelete: false,
    desired: 0,
    conflicts: 0,
    skips: 0,
  };
  try {
    const input = await compute();
    Object.assign(report, {
      allowDelete: input.allowDelete,
      desired: input.desired.size,
      conflicts: input.conflicts ?? 0,
      skips: input.skips ?? 0,
    });
    const { put, remove } = diffTargets(input.desired, store.entries(), input);
    // Removes first: the room they free may be what a put needs in a full map.
    for (const key of remove) report.ops.push(apply("remove", key, () => store.remove(key)));
    for (const entry of put) report.ops.push(apply("put", entry.key, () => store.put(entry)));
  } catch (error) {
    report.error = errorText(error);
    log.error("Reconcile failed ({reason}): {error}", { reason, error: report.error });
  }
  report.durationMs = now() - started;
  if (report.ops.length) {
    log.info("Reconciled ({reason}): {ops} change(s), {failed} failed in {durationMs}ms", {
      reason,
      ops: report.ops.length,
      failed: report.ops.filter((o) => !o.ok).length,
      durationMs: report.durationMs,
    });
  }
  return report;
}

function apply(op: "put" | "remove", key: ProbeKey, fn: () => void): OpResult {
  try {
    fn();
    return { op, key, ok: true };
  } catch (error) {
    const message = errorText(error);
    log.error("Probe map {op} of {key} failed: {error}", { op, key: keyId(key), error: message });
    const code = (error as { code?: unknown })?.code;
    return { op, key, ok: false, error: message, ...(typeof code === "string" ? { code } : {}) };
  }
}
