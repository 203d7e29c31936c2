/**
 * How chaining reads the node's configuration files, which are input: a read
 * stops at MAX_CONFIG_BYTES, never blocks on a FIFO, does not follow a symlink
 * without marking the file unsafe, and skips a file unchanged since the last
 * pass (its stamp). Each file comes back with what the agent needs to judge it
 * (owner, mode, `unsafe`) and to notice another writer later (its stamp).
 * Writing and removal are file_write.ts's; the records and the lock state.ts's.
 */
import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { join } from "node:path";
import { readUpTo } from "../../os/read_fd.ts";
import { judgeRootFile } from "../../os/root_dir.ts";
import { isConfigName, MAX_CONFIG_BYTES } from "./conflist.ts";

/** What a file was when read: a change of any of these is another writer's. */
export interface Stamp {
  dev: number;
  ino: number;
  size: number;
  mtimeMs: number;
  ctimeMs: number;
}

/** One file of the directory as read now. */
export interface ConfigFile {
  name: string;
  /** Its bytes; empty when it is larger than MAX_CONFIG_BYTES (see `size`) or not a file. */
  bytes: Uint8Array;
  size: number;
  stamp: Stamp;
  /** Owner and mode, which a file written in its place keeps. */
  uid: number;
  gid: number;
  mode: number;
  /** Why the agent may not write or remove it (a symlink, another owner...), if so. */
  unsafe?: string;
}

/** Bytes of files read before, by path, reused while a file's stamp is unchanged. */
export type ReadCache = Map<string, { stamp: Stamp; bytes: Uint8Array }>;

/**
 * A file whose mtime is this close to the moment it was read may still change
 * within the same mtime tick without its stamp showing it (git's "racily
 * clean" entries): it is read again next time.
 */
const SETTLED_MS = 2000;
/** The state file holds at most a few originals; beyond this it is not the agent's. */
const NAME_MAX = 255;

// O_NONBLOCK: a FIFO opens at once instead of waiting for a writer. O_NOFOLLOW: a symlink fails
// with ELOOP instead of being opened, so the file judged is the file named. (Deno opens every
// descriptor close-on-exec.)
const READ_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;
const EMPTY = new Uint8Array(0);

/**
 * True for a name the agent may write or remove: one configuration file of
 * the directory itself (no path, no `..`, a .conf/.conflist/.json extension).
 */
export function isPlainConfigName(name: unknown): name is string {
  return typeof name === "string" && isConfigName(name) && !name.includes("/") &&
    !name.includes("\0") && name !== "." && name !== ".." &&
    new TextEncoder().encode(name).length <= NAME_MAX;
}

/** The path of configuration file `name` in `dir`; throws on any other name. */
export function confPath(dir: string, name: string): string {
  if (!isPlainConfigName(name)) {
    throw new TypeError(`Refusing to touch "${name}": not a configuration file name in ${dir}`);
  }
  return join(dir, name);
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

/** True when `dir` has an entry `name` of any kind (a file, a link, a directory). */
export function exists(dir: string, name: string): boolean {
  try {
    Deno.lstatSync(confPath(dir, name));
    return true;
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return false;
    throw e;
  }
}

/** The `code` of a node:fs error (ENOENT, ELOOP...), if it has one. */
export function errnoCode(e: unknown): string | undefined {
  return (e as { code?: string })?.code;
}

/**
 * Reads the file at `path` without following a symlink at it (a symlink is
 * read through, as the runtime reads it, and marked unsafe); null when gone.
 * At most `max` bytes are read, and none of a file stat says is larger.
 */
export function readAt(
  path: string,
  name: string,
  max: number,
  owner: number,
  cache?: ReadCache,
): ConfigFile | null {
  let fd: number;
  let link: string | undefined;
  try {
    fd = openSync(path, READ_FLAGS);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return null;
    if (errnoCode(e) === "EACCES") return unreadable(path, name, owner, e);
    if (errnoCode(e) !== "ELOOP") throw e;
    try {
      link = Deno.readLinkSync(path);
      fd = openSync(path, READ_FLAGS & ~constants.O_NOFOLLOW);
    } catch (e2) {
      if (errnoCode(e2) === "ENOENT" || e2 instanceof Deno.errors.NotFound) return null;
      throw e2;
    }
  }
  try {
    // The opened file's own stat: the file read is the file judged.
    const info = fstatSync(fd);
    const stamp: Stamp = {
      dev: info.dev,
      ino: info.ino,
      size: info.size,
      mtimeMs: info.mtimeMs,
      ctimeMs: info.ctimeMs,
    };
    const unsafe = link !== undefined ? `is a symbolic link to "${link}"` : judgeRootFile(
      { isSymlink: false, isFile: info.isFile(), uid: info.uid, mode: info.mode },
      owner,
    );
    const file = {
      name,
      size: info.size,
      stamp,
      uid: info.uid,
      gid: info.gid,
      mode: info.mode & 0o7777,
      ...(unsafe ? { unsafe } : {}),
    };
    if (!info.isFile() || info.size > max) return { ...file, bytes: EMPTY };
    const cached = cache?.get(path);
    if (cached && sameStamp(cached.stamp, stamp)) return { ...file, bytes: cached.bytes };
    // One byte more than stat said, to notice a file still being written.
    const bytes = readUpTo(fd, info.size + 1);
    if (cache && bytes.length === info.size && Date.now() - info.mtimeMs > SETTLED_MS) {
      cache.set(path, { stamp, bytes });
    }
    return { ...file, bytes };
  } finally {
    closeSync(fd);
  }
}

/**
 * A file root may not open (root without CAP_DAC_OVERRIDE, as under the chart, reads another
 * user's 0600 file no more than anyone): judged by lstat alone, or the error thrown.
 */
function unreadable(path: string, name: string, owner: number, error: unknown): ConfigFile {
  const info = Deno.lstatSync(path);
  const unsafe = judgeRootFile(info, owner);
  if (!unsafe) throw error;
  return {
    name,
    bytes: EMPTY,
    size: info.size,
    stamp: {
      dev: info.dev,
      ino: info.ino ?? 0,
      size: info.size,
      mtimeMs: info.mtime?.getTime() ?? 0,
      ctimeMs: info.ctime?.getTime() ?? 0,
    },
    uid: info.uid ?? -1,
    gid: info.gid ?? -1,
    mode: (info.mode ?? 0) & 0o7777,
    unsafe,
  };
}

/**
 * Reads configuration file `name` of `dir`; null when it is gone. A file
 * larger than MAX_CONFIG_BYTES comes back without its bytes; a file whose
 * stamp matches `cache` is not read again.
 */
export function readConfig(
  dir: string,
  name: string,
  cache?: ReadCache,
  owner: number = Deno.uid() ?? 0,
): ConfigFile | null {
  return readAt(confPath(dir, name), name, MAX_CONFIG_BYTES, owner, cache);
}

/** Why the agent leaves `file` as it is before reading what it says, or undefined. */
export function oversized(file: ConfigFile): string | undefined {
  return file.size > MAX_CONFIG_BYTES
    ? `"${file.name}" is ${file.size} bytes, larger than ${MAX_CONFIG_BYTES}`
    : undefined;
}

/** True when two stamps are of the same file, unchanged. */
export function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs;
}

/** True when two byte strings are the same. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}
