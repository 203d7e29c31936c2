/**
 * The file system side of chaining, with the node's files as input: whoever
 * may write the CNI configuration directory or the state directory could
 * otherwise steer root's writes. Every write and removal is inside a directory
 * only root may change (root_dir.ts's rule, parents included), of a plain
 * configuration name, on a regular file that is root's and writable by no one
 * else: a symlink, another user's file or a looser directory is refused
 * (UnsafeFileError, or a file's `unsafe`), never written through. New files
 * are made under a random name with O_EXCL|O_NOFOLLOW, given their mode and
 * owner on the open descriptor, then renamed into place (or linked, where the
 * name must not exist yet); a file is re-read just before it is replaced or
 * removed, so another writer's change since the read is never lost. Reads
 * stop at MAX_CONFIG_BYTES, never block on a FIFO, and skip a file unchanged
 * since the last pass. The records and the lock are state.ts's.
 */
import {
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  fstatSync,
  fsyncSync,
  linkSync,
  openSync,
  readSync,
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { judgeRootFile, sharedDirProblem } from "../../os/root_dir.ts";
import { isConfigName, MAX_CONFIG_BYTES } from "./conflist.ts";

/** A directory or file the agent may not write through; `path` names it. */
export class UnsafeFileError extends Error {
  override name = "UnsafeFileError";
  constructor(readonly path: string, message: string) {
    super(message);
  }
}

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
// O_EXCL with O_CREAT never opens an existing file, nor follows a symlink at the name.
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL |
  constants.O_NOFOLLOW;
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
function confPath(dir: string, name: string): string {
  if (!isPlainConfigName(name)) {
    throw new TypeError(`Refusing to touch "${name}": not a configuration file name in ${dir}`);
  }
  return join(dir, name);
}

/** The configuration directory's real path (a symlinked directory resolved). */
export function realDir(dir: string): string {
  return Deno.realPathSync(dir);
}

/**
 * Why the agent may not write into the resolved configuration directory
 * `real` (named `confDir` by its configuration), with what to do; undefined
 * when it may.
 */
export function confDirProblem(
  confDir: string,
  real: string,
  owner: number = Deno.uid() ?? 0,
): string | undefined {
  const why = sharedDirProblem(real, owner);
  if (!why) return undefined;
  const named = real === confDir ? `"${confDir}"` : `"${confDir}" (${real})`;
  return `The CNI configuration directory ${named} ${why}, so another user could steer what ` +
    `root writes there: the agent writes nothing in it. Make it root's and writable by no one ` +
    `else (\`chown root "${real}" && chmod go-w "${real}"\`, the same for a parent named)`;
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

function errnoCode(e: unknown): string | undefined {
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
    const buf = new Uint8Array(info.size + 1);
    let length = 0;
    while (length < buf.length) {
      const n = readSync(fd, buf, length, buf.length - length, null);
      if (n === 0) break;
      length += n;
    }
    const bytes = buf.subarray(0, length);
    if (cache && length === info.size && Date.now() - info.mtimeMs > SETTLED_MS) {
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

export function sameStamp(a: Stamp, b: Stamp): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs &&
    a.ctimeMs === b.ctimeMs;
}

export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((v, i) => v === b[i]);
}

/** A name no one can guess, and no runtime loads (not a configuration extension). */
function tempName(): string {
  const random = crypto.getRandomValues(new Uint8Array(16));
  return `.lace-${Array.from(random, (b) => b.toString(16).padStart(2, "0")).join("")}.tmp`;
}

function unlinkQuietly(path: string): void {
  try {
    unlinkSync(path);
  } catch { /* renamed into place, or gone */ }
}

/** The owner and mode a file keeps when the agent writes it anew. */
export interface Ownership {
  uid: number;
  gid: number;
  mode: number;
}

/**
 * Creates a file in `dir` under a random name, exclusively and without
 * following a link, gives it `like`'s owner and mode on the descriptor, and
 * writes and syncs `bytes`; returns its path.
 */
function writeTemp(dir: string, bytes: Uint8Array, like: Ownership): string {
  const temp = join(dir, tempName());
  const fd = openSync(temp, CREATE_FLAGS, 0o600);
  try {
    const made = fstatSync(fd);
    if (made.uid !== like.uid || made.gid !== like.gid) {
      try {
        fchownSync(fd, like.uid, like.gid);
      } catch (cause) {
        throw new Error(
          `Cannot give the file written in ${dir} the owner ${like.uid}:${like.gid} of the one ` +
            `it replaces (${
              (cause as Error).message
            }); make that file root's (\`chown root:root\`)`,
          { cause },
        );
      }
    }
    // After the chown, which may clear set-id bits; special bits are never copied.
    fchmodSync(fd, like.mode & 0o777);
    for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off, bytes.length - off);
    fsyncSync(fd);
  } catch (e) {
    closeSync(fd);
    unlinkQuietly(temp);
    throw e;
  }
  closeSync(fd);
  return temp;
}

/**
 * Puts `bytes` in `dir` as `name`, so the runtime reads the old file or the
 * new one, never half of one. `expect` is the file there as the caller read
 * it: it is re-read just before the rename and, if it changed (another writer
 * came in between), nothing is written and "changed" is returned. With
 * `expect` null the name must not exist (it is linked into place, which never
 * replaces a file made meanwhile); with "any" it is replaced whatever it holds
 * (the agent's own state, under its lock). `like` gives the owner and mode.
 */
export function putFile(
  dir: string,
  name: string,
  bytes: Uint8Array,
  options: { expect: ConfigFile | null | "any"; like: Ownership; owner?: number },
): "written" | "changed" {
  const path = join(dir, name);
  const { expect, owner = Deno.uid() ?? 0 } = options;
  const temp = writeTemp(dir, bytes, options.like);
  try {
    if (expect === "any") {
      renameSync(temp, path);
      return "written";
    }
    if (expect === null) {
      try {
        linkSync(temp, path);
      } catch (e) {
        if (errnoCode(e) === "EEXIST") return "changed";
        throw e;
      }
      return "written";
    }
    const now = readAt(path, name, MAX_CONFIG_BYTES, owner);
    if (
      now === null || now.unsafe !== undefined || !sameStamp(now.stamp, expect.stamp) ||
      !equalBytes(now.bytes, expect.bytes)
    ) {
      return "changed";
    }
    renameSync(temp, path);
    return "written";
  } finally {
    unlinkQuietly(temp);
  }
}

/**
 * Removes `file` from `dir` if it still is what the caller read: it is first
 * renamed aside (atomic: what is checked is exactly what was taken away), then
 * compared; a file another writer put there since goes back ("changed") unless
 * a newer one took its name meanwhile. "gone" when someone removed it already.
 */
export function removeFile(
  dir: string,
  file: ConfigFile,
  owner: number = Deno.uid() ?? 0,
): "removed" | "changed" | "gone" {
  const path = confPath(dir, file.name);
  const aside = join(dir, tempName());
  try {
    renameSync(path, aside);
  } catch (e) {
    if (errnoCode(e) === "ENOENT") return "gone";
    throw e;
  }
  try {
    const moved = readAt(aside, file.name, MAX_CONFIG_BYTES, owner);
    // A rename changes the inode's ctime, so it is not compared here.
    const same = moved !== null && moved.unsafe === undefined &&
      moved.stamp.dev === file.stamp.dev &&
      moved.stamp.ino === file.stamp.ino && moved.size === file.size &&
      moved.stamp.mtimeMs === file.stamp.mtimeMs && equalBytes(moved.bytes, file.bytes);
    if (same) {
      unlinkSync(aside);
      return "removed";
    }
    putBack(aside, path);
    return "changed";
  } catch (e) {
    putBack(aside, path);
    throw e;
  }
}

/**
 * Puts a file renamed aside back at `path`, unless a newer one took the name
 * meanwhile (then it is dropped): linked, which never replaces one.
 */
function putBack(aside: string, path: string): void {
  try {
    linkSync(aside, path);
  } catch (e) {
    // Not a file a link can put back (a directory): renamed back.
    if (errnoCode(e) !== "EEXIST") {
      renameSync(aside, path);
      return;
    }
  }
  unlinkQuietly(aside);
}
