/**
 * Keeps Lace chained into the node's CNI configuration: a pass chains the
 * selected files (the runtime's own by default), and a watch on the directory
 * runs a pass again within a second of another writer rewriting or replacing
 * a file, with a periodic pass as the backstop. `restoreAll` undoes every file
 * the agent chained. Stopping leaves the chain in place: the plugin fails
 * open while no agent runs, so a restart or an upgrade has no window.
 */
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { realTimers, type Timers } from "../../time/timers.ts";
import {
  type ConfigFile,
  listNames,
  loadRecords,
  readConfig,
  realDir,
  saveRecords,
  withLock,
  writeAtomic,
} from "./files.ts";
import { type ChainRecord, type Plan, planChain, planRestore, type Report } from "./plan.ts";
import { type ChainTarget, selectFiles } from "./select.ts";
import { unchainConfig } from "./conflist.ts";

const log = getLogger(["lace", "cni", "chaining"]);

/** A report about one file of the directory. */
export interface FileReport extends Report {
  file: string;
}

export interface ChainerOptions {
  /** The runtime's CNI configuration directory (e.g. /etc/cni/net.d; a symlink is followed). */
  confDir: string;
  /** Root-only directory for the records and the lock; on the host, so they outlive the agent. */
  stateDir: string;
  /** The agent's CNI socket, named in every `lace` entry. */
  socket: string;
  /** Files to chain; empty: the one the runtime uses. */
  targets: ChainTarget[];
  /** Every report of a pass (for the log, Events and metrics). */
  onReport?(report: FileReport): void;
  timers?: Timers;
  /** How long a burst of directory events is gathered before a pass; default 20 ms. */
  debounceMs?: number;
  /** A pass this often even without events (a missed event, a directory made later); 10 s. */
  resyncMs?: number;
}

/** What a pass found: the reports, and the files that name the agent's plugin now. */
export interface PassResult {
  reports: FileReport[];
  chained: string[];
}

/** See the module comment. */
export class Chainer {
  readonly #o: ChainerOptions;
  readonly #timers: Timers;
  #watcher: Deno.FsWatcher | null = null;
  #watching: Promise<void> | null = null;
  #timer: unknown = null;
  #stopped = true;
  /** The last report per file and reason, so a steady problem is reported once, not per pass. */
  #reported = new Map<string, string>();

  constructor(options: ChainerOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
  }

  /** One chaining pass over the directory, under the node's chaining lock. */
  chainOnce(): PassResult {
    const { confDir, stateDir, targets, socket } = this.#o;
    let dir: string;
    try {
      dir = realDir(confDir);
    } catch (e) {
      return this.#done([{
        file: confDir,
        level: "warning",
        reason: "unparsable",
        message: `The CNI configuration directory ${confDir} cannot be read: ${
          (e as Error).message
        }; waiting for the network plugin to create it`,
      }], []);
    }
    return withLock(stateDir, () => {
      const records = loadRecords(stateDir, dir);
      const reports: FileReport[] = [];
      const done = new Set<string>();
      for (const selected of selectFiles(listNames(dir), targets)) {
        if (done.has(selected.name)) continue;
        const file = readConfig(dir, selected.name);
        if (!file) continue;
        const entry = {
          socket,
          ...(selected.network !== undefined
            ? { network: selected.network, networkId: selected.networkId }
            : {}),
        };
        let plan = planChain({
          name: file.name,
          bytes: file.bytes,
          record: records.get(file.name),
          entry,
          occupied: (name) => !records.has(name) && readConfig(dir, name) !== null,
        });
        if (plan.remove && file.symlink) {
          plan = {
            report: {
              level: "warning",
              reason: "conflict",
              message:
                `Not chaining "${file.name}": it is a symlink to a single-plugin file, which would have to become a .conflist`,
            },
          };
        }
        if (this.#apply(dir, file, plan, records)) {
          if (plan.write) done.add(plan.write.name);
        }
        if (plan.report) reports.push({ file: file.name, ...plan.report });
      }
      saveRecords(stateDir, dir, records);
      return this.#done(reports, [...records.keys()]);
    });
  }

  /**
   * Restores every file the agent chained (byte for byte where it is still
   * what the agent wrote) and takes the agent's entry out of any other
   * configuration file that holds it; forgets the records.
   */
  restoreAll(): PassResult {
    const { confDir, stateDir } = this.#o;
    let dir: string;
    try {
      dir = realDir(confDir);
    } catch {
      return { reports: [], chained: [] };
    }
    return withLock(stateDir, () => {
      const records = loadRecords(stateDir, dir);
      const reports: FileReport[] = [];
      const names = new Set([
        ...records.keys(),
        ...selectFiles(listNames(dir), [{
          pattern: "*",
        }]).map((s) => s.name),
      ]);
      for (const name of [...names].sort()) {
        const file = readConfig(dir, name);
        const record = records.get(name);
        if (!record && file && unchainConfig(name, file.bytes).kind !== "write") continue;
        const plan = planRestore({
          name,
          bytes: file?.bytes ?? null,
          record,
          exists: (n) => readConfig(dir, n) !== null,
        });
        this.#apply(dir, file, plan, records);
        if (plan.report) reports.push({ file: name, ...plan.report });
      }
      saveRecords(stateDir, dir, records);
      const left = listNames(dir).filter((n) => {
        const f = readConfig(dir, n);
        return f !== null && unchainConfig(n, f.bytes).kind === "write";
      });
      return this.#done(reports, left);
    });
  }

  /** Applies a plan; false when another writer changed the file since it was read. */
  #apply(
    dir: string,
    file: ConfigFile | null,
    plan: Plan,
    records: Map<string, ChainRecord>,
  ): boolean {
    if (plan.write) {
      const target = file && plan.write.name === file.name ? file.path : join(dir, plan.write.name);
      const written = writeAtomic(target, plan.write.bytes, {
        like: file?.path,
        ...(file ? { expect: { path: file.path, bytes: file.bytes } } : {}),
      });
      if (!written) return false;
    }
    if (plan.remove) {
      try {
        Deno.removeSync(join(dir, plan.remove));
      } catch (e) {
        if (!(e instanceof Deno.errors.NotFound)) throw e;
      }
    }
    if (plan.forget !== undefined) records.delete(plan.forget);
    if (plan.record) records.set(plan.record.file, plan.record);
    return true;
  }

  #done(reports: FileReport[], chained: string[]): PassResult {
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
    return { reports, chained };
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
    try {
      this.chainOnce();
    } catch (error) {
      this.#done([{
        file: this.#o.confDir,
        level: "warning",
        reason: "failed",
        message: `Chaining the lace plugin into ${this.#o.confDir} failed: ${
          (error as Error)?.message ?? error
        }; retrying`,
      }], []);
    }
    this.#ensureWatch();
    this.#timer = this.#timers.setTimeout(() => this.#pass("resync"), this.#o.resyncMs ?? 10_000);
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
