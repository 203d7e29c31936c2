/**
 * One file's turn in a pass: read it, refuse what the agent may not touch,
 * plan (plan.ts), and carry the plan out on disk: the write-ahead record, the
 * write checked against what was read, the checked removal. Another writer
 * changing the file in between is expected (a network plugin's installer
 * rewrites its file at any time), so the file is read and planned again, up
 * to MAX_ATTEMPTS times, and its change is never lost.
 */
import { join } from "node:path";
import { type ConfigFile, exists, oversized, type ReadCache, readConfig } from "./file_read.ts";
import { putFile, removeFile } from "./file_write.ts";
import { saveRecords } from "./state.ts";
import { type ChainRecord, type FileReport, type Plan, planChain, planRestore } from "./plan.ts";
import type { Selected } from "./select.ts";
import { type LaceEntry, unchainConfig } from "./conflist.ts";

/**
 * How often one file is planned again in one pass when another writer changed
 * it between the read and the rename or removal; then the pass reports it and
 * the next pass (the watch's, within a second) tries again.
 */
export const MAX_ATTEMPTS = 3;

/** What one pass holds while it works through the directory's files, under the lock. */
export interface FileTurn {
  /** The configuration directory, resolved. */
  dir: string;
  stateDir: string;
  /** The records as the pass keeps them; saved by the pass at its end. */
  records: Map<string, ChainRecord>;
  /** Where the file's reports go. */
  reports: FileReport[];
  /** Files read by earlier passes; a file written is dropped from it. */
  cache: ReadCache;
  /** Called just before each write or removal, with the file's name. */
  beforeCommit(name: string): void;
}

/** What applying a plan came to. */
type Applied = "applied" | "raced" | { unsafe: FileReport };

/** Chains one selected file, planning again when another writer won a race; the name written. */
export function chainFile(
  turn: FileTurn,
  selected: Selected,
  entry: LaceEntry,
): string | undefined {
  const { dir, records, reports } = turn;
  for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
    const file = readConfig(dir, selected.name, attempt === 1 ? turn.cache : undefined);
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
    const applied = applyPlan(turn, file, plan);
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
 * Restores one file: byte for byte where it is still what the agent wrote,
 * else by taking the agent's entry out of what it holds now; planning again
 * when another writer won a race.
 */
export function restoreFile(turn: FileTurn, name: string): void {
  const { dir, records, reports } = turn;
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
    const applied = applyPlan(turn, file, plan);
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
function applyPlan(turn: FileTurn, file: ConfigFile | null, plan: Plan): Applied {
  const { dir, records } = turn;
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
      saveRecords(turn.stateDir, dir, new Map(records).set(plan.record.file, plan.record));
    }
    turn.beforeCommit(target);
    const put = putFile(dir, target, plan.write.bytes, { expect: current, like: file });
    if (put === "changed") return "raced";
    turn.cache.delete(join(dir, target));
  }
  if (plan.remove && file) {
    if (plan.remove !== file.name) {
      throw new Error(`A plan removes "${plan.remove}", not the file read`);
    }
    turn.beforeCommit(file.name);
    if (removeFile(dir, file) === "changed") {
      if (plan.write) keep();
      return "raced";
    }
  }
  keep();
  return "applied";
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
