/**
 * Keeps Lace chained into the node's CNI configuration by running passes
 * (pass.ts): one at start, one within a second of another writer rewriting or
 * replacing a file (a watch on the directory), one periodically as the
 * backstop, and retries with a backoff while passes fail. Every report is
 * logged and handed on, a steady problem once. `restoreAll` undoes every file
 * the agent chained. Stopping leaves the chain in place: the plugin fails
 * open while no agent runs, so a restart or an upgrade has no window.
 */
import { getLogger } from "@logtape/logtape";
import { type Backoff, backoffDelay } from "../../time/backoff.ts";
import { realTimers, type Timers } from "../../time/timers.ts";
import { realDir } from "./file_read.ts";
import type { FileReport } from "./plan.ts";
import { Pass, type PassOptions, type PassResult } from "./pass.ts";

// The types in the Chainer's options and results, so that its callers import this module alone.
export type { FileReport, PassResult };

const log = getLogger(["lace", "cni", "chaining"]);

export interface ChainerOptions extends PassOptions {
  /** Every report of a pass (for the log, Events and metrics). */
  onReport?(report: FileReport): void;
  timers?: Timers;
  /** How long a burst of directory events is gathered before a pass; default 20 ms. */
  debounceMs?: number;
  /** A pass this often even without events (a missed event, a directory made later); 10 s. */
  resyncMs?: number;
  /** When a pass failed (wholly or for a file), the next comes after this backoff. */
  backoff?: Backoff;
  /**
   * Every pass's result (for the count of chained files); `completed` false when the pass
   * failed as a whole, and its `chained` says nothing.
   */
  onPass?(result: PassResult, completed: boolean): void;
}

/** A failing pass is retried after 1 s, then 2 s, 4 s... up to a minute. */
const RETRY_BACKOFF: Backoff = { initialMs: 1000, maxMs: 60_000 };

/** See the module comment. */
export class Chainer {
  readonly #o: ChainerOptions;
  readonly #timers: Timers;
  readonly #dir: Pass;
  #watcher: Deno.FsWatcher | null = null;
  #watching: Promise<void> | null = null;
  #timer: unknown = null;
  #stopped = true;
  /** Failed passes in a row, for the backoff. */
  #failures = 0;
  /** The last report per file and reason, so a steady problem is reported once, not per pass. */
  #reported = new Map<string, string>();

  constructor(options: ChainerOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
    this.#dir = new Pass(options, (reports) => this.#tell(reports));
  }

  /** One chaining pass over the directory, under the node's chaining lock. */
  chainOnce(): PassResult {
    return this.#dir.chain();
  }

  /**
   * Restores every file the agent chained (byte for byte where it is still
   * what the agent wrote) and takes the agent's entry out of any other
   * configuration file that holds it; forgets the records.
   */
  restoreAll(): PassResult {
    return this.#dir.restore();
  }

  /** Logs each report and hands it to `onReport`; a steady problem once. */
  #tell(reports: FileReport[]): void {
    for (const r of reports) {
      const key = `${r.file}\0${r.reason}`;
      // A steady problem (the same file, reason and text) is reported once, not every pass.
      if (
        r.reason !== "chained" && r.reason !== "restored" && this.#reported.get(key) === r.message
      ) {
        continue;
      }
      this.#reported.set(key, r.message);
      if (r.level === "warning") log.warning("{message}", { message: r.message, file: r.file });
      else log.info("{message}", { message: r.message, file: r.file });
      try {
        this.#o.onReport?.(r);
      } catch (error) {
        log.warning("Reporting a chaining outcome failed: {error}", { error: String(error) });
      }
    }
  }

  /** A pass now, then one after every burst of directory events and every `resyncMs`. */
  start(): void {
    if (!this.#stopped) return;
    this.#stopped = false;
    this.#pass("start");
  }

  #pass(why: string): void {
    if (this.#stopped) return;
    log.debug("Chaining pass ({why})", { why });
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
    let result: PassResult;
    let completed = true;
    try {
      result = this.chainOnce();
    } catch (error) {
      completed = false;
      result = {
        reports: [{
          file: this.#o.confDir,
          level: "warning",
          reason: "failed",
          message: `Chaining the lace plugin into ${this.#o.confDir} failed: ${
            (error as Error)?.message ?? error
          }; retrying`,
        }],
        chained: [],
      };
      this.#tell(result.reports);
    }
    try {
      this.#o.onPass?.(result, completed);
    } catch (error) {
      log.warning("Reporting a chaining pass failed: {error}", { error: String(error) });
    }
    const failed = result.reports.some((r) => r.reason === "failed");
    this.#ensureWatch();
    this.#failures = failed ? this.#failures + 1 : 0;
    const delay = failed
      ? backoffDelay(this.#failures, this.#o.backoff ?? RETRY_BACKOFF)
      : this.#o.resyncMs ?? 10_000;
    this.#timer = this.#timers.setTimeout(() => this.#pass(failed ? "retry" : "resync"), delay);
  }

  #ensureWatch(): void {
    if (this.#watcher || this.#stopped) return;
    let watcher: Deno.FsWatcher;
    try {
      watcher = Deno.watchFs(realDir(this.#o.confDir), { recursive: false });
    } catch {
      return; // no directory yet: the periodic pass tries again
    }
    this.#watcher = watcher;
    this.#watching = (async () => {
      let pending: unknown = null;
      try {
        for await (const event of watcher) {
          // The agent's own temporary files come and go with every write.
          if (event.paths.every((p) => p.endsWith(".tmp"))) continue;
          if (pending !== null) continue;
          pending = this.#timers.setTimeout(() => {
            pending = null;
            this.#pass("change");
          }, this.#o.debounceMs ?? 20);
        }
      } catch (error) {
        log.warning("Watching {dir} failed: {error}", {
          dir: this.#o.confDir,
          error: String(error),
        });
      } finally {
        if (pending !== null) this.#timers.clearTimeout(pending);
        this.#watcher = null;
      }
    })();
  }

  /** Stops watching; leaves every file as it is (the chain stays). */
  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
    try {
      this.#watcher?.close();
    } catch { /* already closed */ }
    await this.#watching;
  }
}
