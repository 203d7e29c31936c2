/**
 * The file system side of chaining: the CNI configuration directory as the
 * runtime sees it (a symlinked directory resolved to where its files are, a
 * symlinked file written through to its target), atomic writes that keep the
 * file's mode and owner, the records that let the agent restore files byte
 * for byte, and a lock so that two installers on one node (an old and a new
 * agent, `lace uninstall`) never interleave a read and a write.
 */
import { join } from "node:path";
import { isObject } from "../../text/json.ts";
import type { ChainRecord } from "./plan.ts";

/** One file of the directory as read now. */
export interface ConfigFile {
  name: string;
  bytes: Uint8Array;
  /** Where writes go: the file itself, or a symlink's target. */
  path: string;
  symlink: boolean;
}

/** The configuration directory's real path (a symlinked directory resolved). */
export function realDir(dir: string): string {
  return Deno.realPathSync(dir);
}

/** The names of the directory's entries that are files or symlinks to files. */
export function listNames(dir: string): string[] {
  const names: string[] = [];
  for (const entry of Deno.readDirSync(dir)) {
    if (entry.isFile) names.push(entry.name);
    else if (entry.isSymlink) {
      try {
        if (Deno.statSync(join(dir, entry.name)).isFile) names.push(entry.name);
      } catch { /* a dangling link is no configuration */ }
    }
  }
  return names;
}

/** Reads one file of `dir`; null when it is gone. */
export function readConfig(dir: string, name: string): ConfigFile | null {
  const path = join(dir, name);
  try {
    const link = Deno.lstatSync(path);
    const target = link.isSymlink ? Deno.realPathSync(path) : path;
    return { name, bytes: Deno.readFileSync(target), path: target, symlink: link.isSymlink };
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/**
 * Writes `bytes` to `path` through a temporary file in the same directory and
 * a rename, so the runtime reads the old file or the new one, never half of
 * one. The new file gets the mode and owner of `like` (the file it replaces or
 * derives from), else 0644. With `expect`, the write is skipped (false) when
 * the file no longer holds those bytes: another writer came in between, and
 * the next pass plans from what it wrote.
 */
export function writeAtomic(
  path: string,
  bytes: Uint8Array,
  options: { like?: string; expect?: { path: string; bytes: Uint8Array } } = {},
): boolean {
  let info: Deno.FileInfo | undefined;
  try {
    info = Deno.statSync(options.like ?? path);
  } catch { /* a new file: default mode, the agent's owner */ }
  const dir = path.slice(0, path.lastIndexOf("/")) || "/";
  const base = path.slice(path.lastIndexOf("/") + 1);
  // Not a .conf/.conflist/.json name, so no runtime ever loads a half-written one.
  const temp = join(dir, `.${base}.lace-${Deno.pid}.tmp`);
  const mode = (info?.mode ?? 0o644) & 0o7777;
  const file = Deno.openSync(temp, { write: true, create: true, truncate: true, mode });
  try {
    for (let off = 0; off < bytes.length;) off += file.writeSync(bytes.subarray(off));
    file.syncSync();
  } finally {
    file.close();
  }
  try {
    Deno.chmodSync(temp, mode);
    if (info?.uid != null && info.gid != null) Deno.chownSync(temp, info.uid, info.gid);
    if (options.expect) {
      let now: Uint8Array | null = null;
      try {
        now = Deno.readFileSync(options.expect.path);
      } catch { /* gone */ }
      if (now === null || !equalBytes(now, options.expect.bytes)) {
        Deno.removeSync(temp);
        return false;
      }
    }
    Deno.renameSync(temp, path);
  } catch (e) {
    try {
      Deno.removeSync(temp);
    } catch { /* already renamed or gone */ }
    throw e;
  }
  return true;
}

/** What the agent keeps in its state directory: the records per configuration directory. */
interface StateFile {
  version: 1;
  records: (ChainRecord & { dir: string })[];
}

const STATE_NAME = "chained.json";
const LOCK_NAME = "chaining.lock";

/** The records of `dir` kept in `stateDir`; a missing or damaged state is an empty one. */
export function loadRecords(stateDir: string, dir: string): Map<string, ChainRecord> {
  const records = new Map<string, ChainRecord>();
  for (const r of loadState(stateDir).records) {
    if (r.dir === dir) records.set(r.file, stripDir(r));
  }
  return records;
}

function stripDir(r: ChainRecord & { dir: string }): ChainRecord {
  return {
    file: r.file,
    originalName: r.originalName,
    original: r.original,
    chainedSha256: r.chainedSha256,
  };
}

function loadState(stateDir: string): StateFile {
  let raw: unknown;
  try {
    raw = JSON.parse(Deno.readTextFileSync(join(stateDir, STATE_NAME)));
  } catch {
    return { version: 1, records: [] };
  }
  if (!isObject(raw) || !Array.isArray(raw.records)) return { version: 1, records: [] };
  const records = raw.records.filter((r): r is ChainRecord & { dir: string } =>
    isObject(r) &&
    ["dir", "file", "originalName", "original", "chainedSha256"].every((k) =>
      typeof r[k] === "string"
    )
  );
  return { version: 1, records };
}

/** Replaces the records of `dir` in `stateDir`, atomically; the state directory is root-only. */
export function saveRecords(stateDir: string, dir: string, records: Map<string, ChainRecord>) {
  Deno.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const others = loadState(stateDir).records.filter((r) => r.dir !== dir);
  const state: StateFile = {
    version: 1,
    records: [...others, ...[...records.values()].map((r) => ({ dir, ...r }))],
  };
  writeAtomic(
    join(stateDir, STATE_NAME),
    new TextEncoder().encode(JSON.stringify(state, null, 2) + "\n"),
    { like: undefined },
  );
  Deno.chmodSync(join(stateDir, STATE_NAME), 0o600);
}

/**
 * Runs `fn` holding the node-wide chaining lock (an flock on a file in
 * `stateDir`), so two installers never interleave their read and write.
 */
export function withLock<T>(stateDir: string, fn: () => T): T {
  Deno.mkdirSync(stateDir, { recursive: true, mode: 0o700 });
  const file = Deno.openSync(join(stateDir, LOCK_NAME), { write: true, create: true });
  try {
    file.lockSync(true);
    return fn();
  } finally {
    file.close(); // closing releases the lock
  }
}
