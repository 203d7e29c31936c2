/**
 * Keeping the probe map in sync: a pure diff between the desired entries and
 * what the store holds, and the runner that decides when to apply it (debounced
 * triggers, periodic resync, retry with backoff, never two runs at once).
 */
import { getLogger } from "@logtape/logtape";
import { keyId, type ProbeEntry, type ProbeKey, type ProbeStore } from "../datapath/probe_map.ts";

const log = getLogger(["lace", "reconcile"]);

/**
 * The minimal operations that turn `current` into `desired`: a put where an
 * entry is missing or its value differs, a remove where the store holds a key
 * nobody wants, and removes only when `allowDelete` (not before the first full
 * pod list, so a restart never empties the map), except for the `withdraw`
 * keys, which leave the map at once (a key that must not be tagged for
 * anyone). Sorted by key for stable logs.
 */
export function diffTargets(
  desired: Map<string, ProbeEntry>,
  current: ProbeEntry[],
  opts: { allowDelete: boolean; withdraw?: ProbeKey[] },
): { put: ProbeEntry[]; remove: ProbeKey[] } {
  const have = new Map<string, ProbeEntry>();
  for (const entry of current) have.set(keyId(entry.key), entry);
  const put: ProbeEntry[] = [];
  const remove: ProbeKey[] = [];
  for (const [id, want] of desired) {
    const got = have.get(id);
    if (
      !got || got.value.mark !== want.value.mark || got.value.networkId !== want.value.networkId
    ) {
      put.push(want);
    }
  }
  if (opts.allowDelete) {
    for (const [id, got] of have) if (!desired.has(id)) remove.push(got.key);
  } else {
    for (const key of opts.withdraw ?? []) {
      const got = have.get(keyId(key));
      if (got && !desired.has(keyId(key))) remove.push(got.key);
    }
  }
  const byKey = (a: ProbeKey, b: ProbeKey) => (keyId(a) < keyId(b) ? -1 : 1);
  put.sort((a, b) => byKey(a.key, b.key));
  remove.sort(byKey);
  return { put, remove };
}

/** What one reconcile should reach; computed afresh by the runner's caller for every run. */
export interface ReconcileInput {
  desired: Map<string, ProbeEntry>;
  allowDelete: boolean;
  /** Keys that leave the map even while deletes are not allowed yet. */
  withdraw?: ProbeKey[];
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

export interface ReconcileObserver {
  onReconcile?(report: ReconcileReport): void;
}

/** The timer functions the runner uses; a @sinonjs/fake-timers clock fits. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(id: unknown): void;
  now(): number;
}

export interface ReconcileRunnerOptions {
  store: ProbeStore;
  compute: () => ReconcileInput | Promise<ReconcileInput>;
  debounceMs: number;
  resyncMs: number;
  backoffMs?: { initial: number; max: number };
  observer?: ReconcileObserver;
  timers?: Timers;
}

const realTimers: Timers = {
  setTimeout: (fn, ms) => setTimeout(fn, ms),
  clearTimeout: (id) => clearTimeout(id as number),
  now: () => performance.now(),
};

/**
 * Runs reconciles: every `trigger()` schedules one after `debounceMs` (a burst
 * becomes one run), a resync runs `resyncMs` after the last run to repair drift,
 * a failed run or op is retried with exponential backoff. Runs never overlap: a
 * trigger during a run schedules one more. Each run reads the store itself,
 * because the kernel map, not memory, is the truth.
 */
export class ReconcileRunner {
  readonly #opts: ReconcileRunnerOptions;
  readonly #timers: Timers;
  #debounce: unknown = undefined;
  #resync: unknown = undefined;
  #retry: unknown = undefined;
  #running: Promise<void> | undefined;
  #again: string | undefined;
  #reasons = new Set<string>();
  #failures = 0;
  #stopped = true;
  #waiters: ((report: ReconcileReport) => void)[] = [];
  #nextWaiters: ((report: ReconcileReport) => void)[] = [];
  lastReport: ReconcileReport | undefined;

  constructor(opts: ReconcileRunnerOptions) {
    this.#opts = opts;
    this.#timers = opts.timers ?? realTimers;
  }

  /** Starts with one reconcile after the debounce, then the periodic resync. */
  start(): void {
    this.#stopped = false;
    this.trigger("start");
  }

  /** Asks for a reconcile soon; bursts within the debounce coalesce. */
  trigger(reason = "event"): void {
    if (this.#stopped) return;
    this.#reasons.add(reason);
    if (this.#running) {
      this.#again ??= reason;
      return;
    }
    if (this.#debounce !== undefined) return;
    this.#debounce = this.#timers.setTimeout(() => {
      this.#debounce = undefined;
      this.#launch();
    }, this.#opts.debounceMs);
  }

  /**
   * Runs a reconcile as soon as possible (right away, or right after the
   * current one) and resolves with the report of a run that started after this
   * call, so its result includes everything known now.
   */
  runNow(reason = "now"): Promise<ReconcileReport> {
    return new Promise((resolve) => {
      this.#reasons.add(reason);
      if (this.#running) {
        this.#nextWaiters.push(resolve);
        this.#again = reason;
        return;
      }
      this.#waiters.push(resolve);
      this.#launch();
    });
  }

  /** Stops scheduling and waits for a running reconcile; never touches the store. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const id of [this.#debounce, this.#resync, this.#retry]) {
      if (id !== undefined) this.#timers.clearTimeout(id);
    }
    this.#debounce = this.#resync = this.#retry = undefined;
    await this.#running;
  }

  /** Resolves once no reconcile is running (a debounced one may still be scheduled). */
  async idle(): Promise<void> {
    while (this.#running) await this.#running;
  }

  #launch(): void {
    for (const id of [this.#debounce, this.#retry]) {
      if (id !== undefined) this.#timers.clearTimeout(id);
    }
    this.#debounce = this.#retry = undefined;
    const reason = [...this.#reasons].join(",") || "resync";
    this.#reasons.clear();
    const waiters = this.#waiters;
    this.#waiters = [];
    this.#running = this.#run(reason).then((report) => {
      this.lastReport = report;
      for (const w of waiters) w(report);
      this.#running = undefined;
      this.#after(report);
    });
  }

  #after(report: ReconcileReport): void {
    const failed = report.error !== undefined || report.ops.some((o) => !o.ok);
    this.#failures = failed ? this.#failures + 1 : 0;
    if (this.#stopped && this.#nextWaiters.length) {
      const stopped = { ...report, reason: "stopped", ops: [], error: "Reconcile runner stopped" };
      for (const w of this.#nextWaiters) w(stopped);
      this.#nextWaiters = [];
    }
    if (this.#nextWaiters.length) {
      this.#waiters.push(...this.#nextWaiters);
      this.#nextWaiters = [];
      this.#again = undefined;
      this.#launch();
      return;
    }
    if (this.#stopped) {
      return;
    }
    if (this.#again !== undefined) {
      const again = this.#again;
      this.#again = undefined;
      this.trigger(again);
    } else if (failed) {
      const { initial, max } = this.#opts.backoffMs ?? { initial: 500, max: 30_000 };
      const delay = Math.min(max, initial * 2 ** (this.#failures - 1));
      log.warning("Reconcile incomplete; retrying in {delay}ms (attempt {attempt})", {
        delay,
        attempt: this.#failures + 1,
      });
      this.#retry = this.#timers.setTimeout(() => {
        this.#retry = undefined;
        this.#reasons.add("retry");
        this.#launch();
      }, delay);
    }
    if (this.#resync !== undefined) this.#timers.clearTimeout(this.#resync);
    this.#resync = this.#timers.setTimeout(() => {
      this.#resync = undefined;
      if (this.#running) this.#again ??= "resync";
      else {
        this.#reasons.add("resync");
        this.#launch();
      }
    }, this.#opts.resyncMs);
  }

  async #run(reason: string): Promise<ReconcileReport> {
    const started = this.#timers.now();
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
      const input = await this.#opts.compute();
      Object.assign(report, {
        allowDelete: input.allowDelete,
        desired: input.desired.size,
        conflicts: input.conflicts ?? 0,
        skips: input.skips ?? 0,
      });
      const { put, remove } = diffTargets(input.desired, this.#opts.store.entries(), input);
      // Removes first: the room they free may be what a put needs in a full map.
      for (const key of remove) {
        report.ops.push(this.#apply("remove", key, () => this.#opts.store.remove(key)));
      }
      for (const entry of put) {
        report.ops.push(this.#apply("put", entry.key, () => this.#opts.store.put(entry)));
      }
    } catch (error) {
      report.error = error instanceof Error ? error.message : String(error);
      log.error("Reconcile failed ({reason}): {error}", { reason, error: report.error });
    }
    report.durationMs = this.#timers.now() - started;
    if (report.ops.length) {
      log.info("Reconciled ({reason}): {ops} change(s), {failed} failed in {durationMs}ms", {
        reason,
        ops: report.ops.length,
        failed: report.ops.filter((o) => !o.ok).length,
        durationMs: report.durationMs,
      });
    }
    try {
      this.#opts.observer?.onReconcile?.(report);
    } catch (error) {
      log.error("Reconcile observer failed: {error}", { error });
    }
    return report;
  }

  #apply(op: "put" | "remove", key: ProbeKey, fn: () => void): OpResult {
    try {
      fn();
      return { op, key, ok: true };
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      log.error("Probe map {op} of {key} failed: {error}", { op, key: keyId(key), error: message });
      const code = (error as { code?: unknown })?.code;
      return { op, key, ok: false, error: message, ...(typeof code === "string" ? { code } : {}) };
    }
  }
}
