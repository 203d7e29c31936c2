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
import { type Backoff, backoffDelay } from "../../time/backoff.ts";
import { realTimers, type Timers } from "../../time/timers.ts";
import {
  confDirProblem,
  type ConfigFile,
  exists,
  listNames,
  oversized,
  putFile,
  type ReadCache,
  readConfig,
  realDir,
  removeFile,
  UnsafeFileError,
} from "./files.ts";
import { loadRecords, saveRecords, withLock } from "./state.ts";
import { type ChainRecord, type Plan, planChain, planRestore, type Report } from "./plan.ts";
import { type ChainTarget, type Selected, selectFiles } from "./select.ts";
import { unchainConfig } from "./conflist.ts";
import { runtimeFileIn } from "./runtime_file.ts";
import { PLUGIN_NAME } from "./plugin.ts";
import { type ContainerRuntime, runtimeName } from "./runtimes.ts";

const log = getLogger(["lace", "cni", "chaining"]);

/**
 * How often one file is planned again in one pass when another writer changed
 * it between the read and the rename or removal; then the pass reports it and
 * the next pass (the watch's, within a second) tries again.
 */
export const MAX_ATTEMPTS = 3;

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
  /** The agent's pin path, named in every `lace` entry when given (not the plugin's default). */
  pinPath?: string;
  /** "shared" when the agent runs with --address-sharing=shared, named in every `lace` entry. */
  addressSharing?: "shared";
  /** Files to chain; empty: the one the runtime uses. */
  targets: ChainTarget[];
  /**
   * Why the runtime could not run the lace plugin (plugin.ts), asked at every pass: while it
   * says so, nothing is chained (a chained file would fail every new pod's network setup).
   */
  pluginProblem?: () => string | undefined;
  /** The container runtime whose rule picks its file (runtime_file.ts); undefined: unknown. */
  runtime?: () => ContainerRuntime | undefined;
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
  /**
   * Called just before each write or removal the pass commits, with the file's
   * name: where tests play another writer.
   */
  beforeCommit?(name: string): void;
}

/** What a pass found: the reports, and the files that name the agent's plugin now. */
export interface PassResult {
  reports: FileReport[];
  chained: string[];
}

/** A failing pass is retried after 1 s, then 2 s, 4 s... up to a minute. */
const RETRY_BACKOFF: Backoff = { initialMs: 1000, maxMs: 60_000 };

/** What applying a plan came to. */
type Applied = "applied" | "raced" | { unsafe: FileReport };

/** See the module comment. */
export class Chainer {
  readonly #o: ChainerOptions;
  readonly #timers: Timers;
  #watcher: Deno.FsWatcher | null = null;
  #watching: Promise<void> | null = null;
  #timer: unknown = null;
  #stopped = true;
  /** Failed passes in a row, for the backoff. */
  #failures = 0;
  /** The last report per file and reason, so a steady problem is reported once, not per pass. */
  #reported = new Map<string, string>();
  /** Files read by earlier passes: one whose stamp is unchanged is not read again. */
  #cache: ReadCache = new Map();

  constructor(options: ChainerOptions) {
    this.#o = options;
    this.#timers = options.timers ?? realTimers;
  }

  /**
   * The configuration directory resolved, or the report that says why the
   * pass writes nothing there (missing, or someone other than root may write it).
   */
  #openDir(): { dir: string } | { report: FileReport } {
    const { confDir } = this.#o;
    let dir: string;
    try {
      dir = realDir(confDir);
    } catch (e) {
      return {
        report: {
          file: confDir,
          level: "warning",
          reason: "unparsable",
          message: `The CNI configuration directory ${confDir} cannot be read: ${
            (e as Error).message
          }; waiting for the network plugin to create it`,
        },
      };
    }
    const problem = confDirProblem(confDir, dir);
    if (problem) {
      return { report: { file: confDir, level: "warning", reason: "unsafe", message: problem } };
    }
    return { dir };
  }

  /** Runs `fn` under the lock; a state directory or file root may not trust is a report. */
  #locked(fn: () => PassResult): PassResult {
    try {
      return withLock(this.#o.stateDir, fn);
    } catch (e) {
      if (!(e instanceof UnsafeFileError)) throw e;
      return this.#done(
        [{ file: e.path, level: "warning", reason: "unsafe", message: e.message }],
        [],
      );
    }
  }

  #refusedRecords(refused: string[]): FileReport[] {
    return refused.map((message) => ({
      file: this.#o.stateDir,
      level: "warning",
      reason: "bad-record",
      message: `${message}; it is ignored (the file it names is restored from what it holds now)`,
    }));
  }

  /** One chaining pass over the directory, under the node's chaining lock. */
  chainOnce(): PassResult {
    const { stateDir, targets } = this.#o;
    const opened = this.#openDir();
    if ("report" in opened) return this.#done([opened.report], []);
    const { dir } = opened;
    return this.#locked(() => {
      const loaded = loadRecords(stateDir, dir, this.#cache);
      const records = loaded.records;
      const reports = this.#refusedRecords(loaded.refused);
      this.#dropUncommitted(dir, records);
      const done = new Set<string>();
      const names = listNames(dir);
      const noPlugin = this.#pluginReport(records);
      if (noPlugin) reports.push(noPlugin);
      const selection = noPlugin
        ? []
        : targets.length
        ? selectFiles(names, targets)
        : this.#runtimeFile(dir, reports);
      for (const selected of selection) {
        if (done.has(selected.name)) continue;
        const before = reports.length;
        try {
          const written = this.#chainFile(dir, selected, records, reports);
          if (written) done.add(written);
        } catch (e) {
          // One file that cannot be written (a read-only mount, no space) stops no other.
          reports.push({
            file: selected.name,
            level: "warning",
            reason: "failed",
            message: `Chaining the lace plugin into "${selected.name}" failed: ${
              (e as Error)?.message ?? e
            }; retrying`,
          });
        }
        if (selected.usedBy) usedByRuntime(reports.slice(before), selected.usedBy);
      }
      saveRecords(stateDir, dir, records, this.#cache);
      this.#forgetGone(dir, names);
      return this.#done(reports, [...records.keys()]);
    });
  }

  /**
   * The report that stops a pass from chaining: the plugin the runtime would run is missing
   * or not root's alone. Files chained already stay chained (docs/cni.md says why), named.
   */
  #pluginReport(records: Map<string, ChainRecord>): FileReport | undefined {
    let problem: string | undefined;
    try {
      problem = this.#o.pluginProblem?.();
    } catch (e) {
      problem = `The lace plugin cannot be checked: ${(e as Error)?.message ?? e}`;
    }
    if (!problem) return undefined;
    const chained = [...records.keys()].map((n) => `"${n}"`).join(", ");
    return {
      file: PLUGIN_NAME,
      level: "warning",
      reason: "no-plugin",
      message: `${problem}. ` +
        (chained
          ? `${chained} still name the lace plugin: every new pod's network setup on this node ` +
            `fails until it is back (the agent leaves the chain as it is)`
          : `Nothing is chained until it is; the agent checks again at every pass`),
    };
  }

  /**
   * Forgets the records whose file is gone or names no lace entry: what a
   * write-ahead record leaves when the agent died before the write it announced
   * (the file still holds its original), and what restoring forgets anyway. A
   * record kept for such a name would let the next pass take for its own a file
   * another writer makes there.
   */
  #dropUncommitted(dir: string, records: Map<string, ChainRecord>): void {
    for (const name of [...records.keys()]) {
      const file = readConfig(dir, name, this.#cache);
      if (file && (file.unsafe || oversized(file))) continue;
      if (!file || unchainConfig(name, file.bytes).kind === "not-chained") records.delete(name);
    }
  }

  /** The file the runtime uses, as its rule picks it; what it skips or lacks is reported. */
  #runtimeFile(dir: string, reports: FileReport[]): Selected[] {
    const runtime = this.#o.runtime?.();
    const choice = runtimeFileIn(dir, runtime, this.#cache);
    const who = runtimeName(runtime);
    for (const s of choice.skipped) {
      reports.push({
        file: s.name,
        level: "warning",
        reason: "unparsable",
        message: `${who} skips "${s.name}" (${s.error})${
          choice.file ? ` and uses "${choice.file}"` : ""
        }; the file is left as it is`,
      });
    }
    if (choice.none) {
      reports.push({
        file: this.#o.confDir,
        level: "warning",
        reason: "no-runtime-file",
        message: `Nothing to chain: ${choice.none}`,
      });
    }
    if (!choice.file) return [];
    if (choice.pluginDir) {
      reports.push({
        file: choice.file,
        level: "warning",
        reason: "refused",
        message:
          `Not chaining "${choice.file}", the file ${who} uses: its network also takes plugins from the directory named after it, which run after the file's own, so a lace entry there would not run last`,
      });
      return [];
    }
    return [{ name: choice.file, usedBy: who }];
  }

  /** Chains one selected file, planning again when another writer won a race; the name written. */
  #chainFile(
    dir: string,
    selected: Selected,
    records: Map<string, ChainRecord>,
    reports: FileReport[],
  ): string | undefined {
    const { socket, pinPath, addressSharing } = this.#o;
    const entry = {
      socket,
      ...(pinPath !== undefined ? { pinPath } : {}),
      ...(addressSharing !== undefined ? { addressSharing } : {}),
      ...(selected.network !== undefined
        ? { network: selected.network, networkId: selected.networkId }
        : {}),
    };
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const file = readConfig(dir, selected.name, attempt === 1 ? this.#cache : undefined);
      if (!file) return undefined;
      if (file.unsafe) {
        reports.push(unsafeFile(file, "chaining"));
        return undefined;
      }
      const tooLarge = oversized(file);
      if (tooLarge) {
        reports.push({
          file: file.name,
          level: "warning",
          reason: "unparsable",
          message: `Not chaining: ${tooLarge}; the file is left as it is`,
        });
        return undefined;
      }
      const plan = planChain({
        name: file.name,
        bytes: file.bytes,
        record: records.get(file.name),
        entry,
        occupied: (name) => !records.has(name) && exists(dir, name),
      });
      const applied = this.#apply(dir, file, plan, records);
      if (applied === "raced") continue;
      if (applied !== "applied") {
        reports.push(applied.unsafe);
        return undefined;
      }
      if (plan.report) reports.push({ file: file.name, ...plan.report });
      return plan.write?.name;
    }
    reports.push(raced(selected.name, "chained"));
    return undefined;
  }

  /**
   * Restores every file the agent chained (byte for byte where it is still
   * what the agent wrote) and takes the agent's entry out of any other
   * configuration file that holds it; forgets the records.
   */
  restoreAll(): PassResult {
    const { confDir, stateDir } = this.#o;
    try {
      realDir(confDir);
    } catch {
      return { reports: [], chained: [] };
    }
    const opened = this.#openDir();
    if ("report" in opened) return this.#done([opened.report], []);
    const { dir } = opened;
    return this.#locked(() => {
      const loaded = loadRecords(stateDir, dir);
      const records = loaded.records;
      const reports = this.#refusedRecords(loaded.refused);
      const names = new Set([
        ...records.keys(),
        ...selectFiles(listNames(dir), [{ pattern: "*" }]).map((s) => s.name),
      ]);
      for (const name of [...names].sort()) this.#restoreFile(dir, name, records, reports);
      saveRecords(stateDir, dir, records);
      const left = listNames(dir).filter((n) => {
        const f = readConfig(dir, n);
        return f !== null && !oversized(f) && unchainConfig(n, f.bytes).kind === "write";
      });
      return this.#done(reports, left);
    });
  }

  #restoreFile(
    dir: string,
    name: string,
    records: Map<string, ChainRecord>,
    reports: FileReport[],
  ): void {
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const file = readConfig(dir, name);
      const record = records.get(name);
      if (file?.unsafe) {
        if (record || unchainConfig(name, file.bytes).kind === "write") {
          reports.push(unsafeFile(file, "restoring"));
        }
        return;
      }
      if (file && oversized(file)) {
        if (record) {
          reports.push({
            file: name,
            level: "warning",
            reason: "unparsable",
            message: `Not restoring: ${oversized(file)}; the file is left as it is`,
          });
        }
        return;
      }
      if (!record && file && unchainConfig(name, file.bytes).kind !== "write") return;
      const plan = planRestore({
        name,
        bytes: file?.bytes ?? null,
        record,
        exists: (n) => exists(dir, n),
      });
      const applied = this.#apply(dir, file, plan, records);
      if (applied === "raced") continue;
      if (applied !== "applied") {
        reports.push(applied.unsafe);
        return;
      }
      if (plan.report) reports.push({ file: name, ...plan.report });
      return;
    }
    reports.push(raced(name, "restored"));
  }

  /**
   * Applies a plan: a new record first (saved, so it outlives a crash), then
   * the write (checked against what was read, or linked where the name must be
   * new), then the removal of the file read (checked the same way), then the
   * records. "raced" when another writer changed a file since it was read; a
   * write that landed keeps its record even then.
   */
  #apply(
    dir: string,
    file: ConfigFile | null,
    plan: Plan,
    records: Map<string, ChainRecord>,
  ): Applied {
    const keep = () => {
      if (plan.forget !== undefined) records.delete(plan.forget);
      if (plan.record) records.set(plan.record.file, plan.record);
    };
    if (plan.write && file) {
      const target = plan.write.name;
      const current = target === file.name ? file : readConfig(dir, target);
      if (current?.unsafe) return { unsafe: unsafeFile(current, "writing") };
      if (plan.record) {
        // Write-ahead: the record holding the original is on disk before the file it restores,
        // so a crash between the two never leaves a chained file nothing can give back.
        saveRecords(this.#o.stateDir, dir, new Map(records).set(plan.record.file, plan.record));
      }
      this.#o.beforeCommit?.(target);
      const put = putFile(dir, target, plan.write.bytes, { expect: current, like: file });
      if (put === "changed") return "raced";
      this.#cache.delete(join(dir, target));
    }
    if (plan.remove && file) {
      if (plan.remove !== file.name) {
        throw new Error(`A plan removes "${plan.remove}", not the file read`);
      }
      this.#o.beforeCommit?.(file.name);
      if (removeFile(dir, file) === "changed") {
        if (plan.write) keep();
        return "raced";
      }
    }
    keep();
    return "applied";
  }

  /** Drops cached files of `dir` that are no longer there. */
  #forgetGone(dir: string, names: string[]): void {
    const present = new Set(names.map((n) => join(dir, n)));
    for (const path of this.#cache.keys()) {
      if (path.startsWith(join(dir, "/")) && !present.has(path)) this.#cache.delete(path);
    }
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
    let result: PassResult;
    let completed = true;
    try {
      result = this.chainOnce();
    } catch (error) {
      completed = false;
      result = this.#done([{
        file: this.#o.confDir,
        level: "warning",
        reason: "failed",
        message: `Chaining the lace plugin into ${this.#o.confDir} failed: ${
          (error as Error)?.message ?? error
        }; retrying`,
      }], []);
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

/** Says in each warning about the runtime's file that the runtime uses it all the same. */
function usedByRuntime(reports: FileReport[], runtime: string): void {
  for (const r of reports) {
    if (r.level !== "warning") continue;
    r.message +=
      `; ${runtime} uses this file, so new pods register only once the API shows their IP`;
  }
}

/** The report for a file the agent may not write or remove. */
function unsafeFile(file: ConfigFile, doing: string): FileReport {
  return {
    file: file.name,
    level: "warning",
    reason: "unsafe",
    message: `Not ${doing} "${file.name}": it ${file.unsafe}, and the agent writes no file that ` +
      `is a link, another user's or writable by others; make it a regular file, root's and ` +
      `writable by no one else (or chain it by hand)`,
  };
}

/** The report for a file another writer kept changing through every attempt of a pass. */
function raced(name: string, doing: string): FileReport {
  return {
    file: name,
    level: "warning",
    reason: "raced",
    message: `"${name}" was not ${doing}: another writer changed it between the agent's read and ` +
      `its write ${MAX_ATTEMPTS} times; the next pass tries again`,
  };
}
