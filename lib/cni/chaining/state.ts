/**
 * The chaining state on the node: the records that let the agent restore
 * files byte for byte are data, checked on load, never paths to follow; the
 * lock keeps two installers on one node (an old and a new agent,
 * `lace uninstall`) from interleaving. Written through file_write.ts's rules.
 */
import { closeSync, constants, fsyncSync, openSync } from "node:fs";
import { join } from "node:path";
import { isObject } from "../../text/json.ts";
import { ensureRootDir, judgeRootFile, rootDirProblem } from "../../os/root_dir.ts";
import {
  type ConfigFile,
  equalBytes,
  isPlainConfigName,
  readAt,
  type ReadCache,
} from "./file_read.ts";
import { putFile, UnsafeFileError } from "./file_write.ts";
import { chainedName, MAX_CONFIG_BYTES } from "./conflist.ts";
import type { ChainRecord } from "./plan.ts";

export const MAX_STATE_BYTES = 64 * 1024 * 1024;
const STATE_NAME = "chained.json";
const LOCK_NAME = "chaining.lock";

/** What the agent keeps in its state directory: the records per configuration directory. */
interface StateFile {
  version: 1;
  records: (ChainRecord & { dir: string })[];
}

/** The records of the state file, and why any were refused. */
interface LoadedState {
  records: (ChainRecord & { dir: string })[];
  refused: string[];
  /** The state file as read, for the next save. */
  file: ConfigFile | null;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * Why one record of the state file cannot be used, or undefined. Records are
 * data, not paths: a name is one configuration file of the directory, and the
 * chained name is the original's or the .conflist chaining made of it.
 */
export function recordProblem(r: unknown): string | undefined {
  if (!isObject(r)) return "is not an object";
  const missing = ["dir", "file", "originalName", "original", "chainedSha256"].filter((k) =>
    typeof r[k] !== "string"
  );
  if (missing.length > 0) return `lacks ${missing.join(", ")}`;
  const { dir, file, originalName, original, chainedSha256 } = r as Record<string, string>;
  if (!dir.startsWith("/")) {
    return `names the directory ${JSON.stringify(dir)}, not an absolute path`;
  }
  for (const [key, name] of [["file", file], ["originalName", originalName]]) {
    if (!isPlainConfigName(name)) {
      return `names ${key} ${JSON.stringify(name)}, not a configuration file of the directory`;
    }
  }
  if (file !== originalName && file !== chainedName(originalName, true)) {
    return `names file ${JSON.stringify(file)}, which chaining never makes of ${
      JSON.stringify(originalName)
    }`;
  }
  if (!SHA256_HEX.test(chainedSha256)) return "has no sha256 of the chained bytes";
  if (
    original.length % 4 !== 0 || !BASE64.test(original) ||
    original.length > Math.ceil(MAX_CONFIG_BYTES / 3) * 4
  ) {
    return "holds no original of at most 1 MiB in base64";
  }
  return undefined;
}

function stateFileProblem(path: string, file: ConfigFile): UnsafeFileError {
  return new UnsafeFileError(
    path,
    `The chaining state file "${path}" ${file.unsafe}: the agent neither reads nor writes it. ` +
      `Only root may write the state directory; check what made it, then remove it ` +
      `(the files it chained are then restored from what they hold now, not byte for byte)`,
  );
}

/**
 * The state file's records; a missing one is empty, a damaged one too (the
 * agent rewrites it). Throws UnsafeFileError when it is not the agent's own
 * regular file, and leaves out every record that fails recordProblem().
 */
function loadState(stateDir: string, cache?: ReadCache): LoadedState {
  const path = join(stateDir, STATE_NAME);
  const file = readAt(path, STATE_NAME, MAX_STATE_BYTES, Deno.uid() ?? 0, cache);
  if (file === null) return { records: [], refused: [], file };
  if (file.unsafe) throw stateFileProblem(path, file);
  let raw: unknown;
  try {
    if (file.size > MAX_STATE_BYTES) throw new RangeError("too large");
    raw = JSON.parse(new TextDecoder().decode(file.bytes));
  } catch {
    return {
      records: [],
      refused: [`"${path}" is not the agent's JSON: its records are lost`],
      file,
    };
  }
  if (!isObject(raw) || !Array.isArray(raw.records)) return { records: [], refused: [], file };
  const records: (ChainRecord & { dir: string })[] = [];
  const refused: string[] = [];
  raw.records.forEach((r, i) => {
    const problem = recordProblem(r);
    if (problem) refused.push(`Refused record ${i + 1} of "${path}": it ${problem}`);
    else records.push(r as ChainRecord & { dir: string });
  });
  return { records, refused, file };
}

/** The records of `dir` kept in `stateDir`, and why any record was refused. */
export function loadRecords(
  stateDir: string,
  dir: string,
  cache?: ReadCache,
): { records: Map<string, ChainRecord>; refused: string[] } {
  const records = new Map<string, ChainRecord>();
  const state = loadState(stateDir, cache);
  for (const r of state.records) {
    if (r.dir === dir) records.set(r.file, stripDir(r));
  }
  return { records, refused: state.refused };
}

/** Why the state directory or its records cannot be used as they are (lace doctor). */
export function stateProblems(stateDir: string): string[] {
  const dir = rootDirProblem(stateDir, "CNI state directory");
  if (dir && !dir.tightenable) return [dir.problem];
  try {
    return loadState(stateDir).refused;
  } catch (e) {
    return [(e as Error).message];
  }
}

function stripDir(r: ChainRecord & { dir: string }): ChainRecord {
  return {
    file: r.file,
    originalName: r.originalName,
    original: r.original,
    chainedSha256: r.chainedSha256,
  };
}

/** Replaces the records of `dir` in `stateDir`, atomically; the file is root-only (0600). */
export function saveRecords(
  stateDir: string,
  dir: string,
  records: Map<string, ChainRecord>,
  cache?: ReadCache,
) {
  const loaded = loadState(stateDir, cache);
  const others = loaded.records.filter((r) => r.dir !== dir);
  const state: StateFile = {
    version: 1,
    // One key order, so that a pass that changed nothing gives the same bytes.
    records: [...others, ...[...records.values()].map((r) => ({ dir, ...r }))].map((r) => ({
      dir: r.dir,
      ...stripDir(r),
    })),
  };
  const bytes = new TextEncoder().encode(JSON.stringify(state, null, 2) + "\n");
  // A pass that changed nothing writes nothing (a pass runs every 10 s).
  if (loaded.file && equalBytes(loaded.file.bytes, bytes)) return;
  const me = { uid: Deno.uid() ?? 0, gid: Deno.gid() ?? 0, mode: 0o600 };
  putFile(stateDir, STATE_NAME, bytes, { expect: "any", like: me });
  // The rename too must reach the disk before the configuration write the record announces.
  syncDir(stateDir);
}

/** Flushes a directory's entries (a rename in it) to the disk. */
function syncDir(dir: string): void {
  const fd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY);
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Runs `fn` holding the node-wide chaining lock (an flock on a file in
 * `stateDir`), so two installers never interleave their read and write. The
 * state directory is made 0700, or checked as the pin path is: one that is not
 * root's alone, or a lock file that is not, is an UnsafeFileError.
 */
export function withLock<T>(stateDir: string, fn: () => T): T {
  const owner = Deno.uid() ?? 0;
  const problem = rootDirProblem(stateDir, "CNI state directory", owner);
  if (problem && !problem.tightenable) throw new UnsafeFileError(stateDir, problem.problem);
  ensureRootDir(stateDir, "CNI state directory", owner);
  const path = join(stateDir, LOCK_NAME);
  const refuse = (why: string) =>
    new UnsafeFileError(
      path,
      `The chaining lock "${path}" ${why}: the agent does not use it. Only root may write the ` +
        `state directory; check what made it, then remove it`,
    );
  // Opening creates through a dangling symlink: look first (only root can change it after).
  let before: Deno.FileInfo | undefined;
  try {
    before = Deno.lstatSync(path);
  } catch (e) {
    if (!(e instanceof Deno.errors.NotFound)) throw e;
  }
  if (before?.isSymlink) throw refuse("is a symbolic link");
  const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
  try {
    const opened = file.statSync();
    const named = Deno.lstatSync(path);
    const why = judgeRootFile(
      { isSymlink: named.isSymlink, isFile: opened.isFile, uid: opened.uid, mode: opened.mode },
      owner,
    ) ?? (named.ino !== opened.ino ? "changed while it was opened" : undefined);
    if (why) throw refuse(why);
    file.lockSync(true);
    return fn();
  } finally {
    file.close(); // closing releases the lock
  }
}
