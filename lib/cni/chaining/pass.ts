/**
 * One pass over the node's CNI configuration directory, under the node's
 * chaining lock: chaining the selected files (the runtime's own by default),
 * or restoring every file the agent chained. A pass writes nothing where
 * someone other than root may write, and chains nothing while the runtime
 * could not run the lace plugin; each file's turn is apply.ts's. When and how
 * often passes run, and how their reports are told, is chainer.ts's.
 */
import { join } from "node:path";
import { listNames, oversized, type ReadCache, readConfig, realDir } from "./file_read.ts";
import { confDirProblem, UnsafeFileError } from "./file_write.ts";
import { loadRecords, saveRecords, withLock } from "./state.ts";
import type { ChainRecord, FileReport } from "./plan.ts";
import { type ChainTarget, type Selected, selectFiles } from "./select.ts";
import { type LaceEntry, unchainConfig } from "./conflist.ts";
import { chainFile, type FileTurn, restoreFile } from "./apply.ts";
import { runtimeFileIn } from "./runtime_file.ts";
import { PLUGIN_NAME } from "./plugin.ts";
import { type ContainerRuntime, runtimeName } from "./runtimes.ts";

export interface PassOptions {
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

/** Runs passes over one directory; `report` is told each pass's reports before the lock is let go. */
export class Pass {
  readonly #o: PassOptions;
  readonly #report: (reports: FileReport[]) => void;
  /** Files read by earlier passes: one whose stamp is unchanged is not read again. */
  #cache: ReadCache = new Map();

  constructor(options: PassOptions, report: (reports: FileReport[]) => void) {
    this.#o = options;
    this.#report = report;
  }

  /** One chaining pass over the directory, under the node's chaining lock. */
  chain(): PassResult {
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
      const turn = this.#turn(dir, records, reports);
      for (const selected of selection) {
        if (done.has(selected.name)) continue;
        const before = reports.length;
        try {
          const written = chainFile(turn, selected, this.#entry(selected));
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
   * Restores every file the agent chained (byte for byte where it is still
   * what the agent wrote) and takes the agent's entry out of any other
   * configuration file that holds it; forgets the records.
   */
  restore(): PassResult {
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
      const turn = this.#turn(dir, records, reports);
      for (const name of [...names].sort()) restoreFile(turn, name);
      saveRecords(stateDir, dir, records);
      const left = listNames(dir).filter((n) => {
        const f = readConfig(dir, n);
        return f !== null && !oversized(f) && unchainConfig(n, f.bytes).kind === "write";
      });
      return this.#done(reports, left);
    });
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

  /** The `lace` entry chained into a selected file. */
  #entry(selected: Selected): LaceEntry {
    const { socket, pinPath, addressSharing } = this.#o;
    return {
      socket,
      ...(pinPath !== undefined ? { pinPath } : {}),
      ...(addressSharing !== undefined ? { addressSharing } : {}),
      ...(selected.network !== undefined
        ? { network: selected.network, networkId: selected.networkId }
        : {}),
    };
  }

  #turn(dir: string, records: Map<string, ChainRecord>, reports: FileReport[]): FileTurn {
    const { stateDir } = this.#o;
    const beforeCommit = (name: string) => this.#o.beforeCommit?.(name);
    return { dir, stateDir, records, reports, cache: this.#cache, beforeCommit };
  }

  /** Drops cached files of `dir` that are no longer there. */
  #forgetGone(dir: string, names: string[]): void {
    const present = new Set(names.map((n) => join(dir, n)));
    for (const path of this.#cache.keys()) {
      if (path.startsWith(join(dir, "/")) && !present.has(path)) this.#cache.delete(path);
    }
  }

  #done(reports: FileReport[], chained: string[]): PassResult {
    this.#report(reports);
    return { reports, chained };
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
