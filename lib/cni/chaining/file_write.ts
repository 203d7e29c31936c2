/**
 * How chaining writes and removes the node's configuration files, where
 * whoever may write the CNI configuration directory or the state directory
 * could otherwise steer root's writes. Every write and removal is inside a
 * directory only root may change (root_dir.ts's rule, parents included), of a
 * plain configuration name, on a regular file that is root's and writable by
 * no one else: a symlink, another user's file or a looser directory is refused
 * (UnsafeFileError, or a file's `unsafe`), never written through. New files
 * are made under a random name with O_EXCL|O_NOFOLLOW, given their mode and
 * owner on the open descriptor, then renamed into place (or linked, where the
 * name must not exist yet); a file is re-read (file_read.ts) just before it is
 * replaced or removed, so another writer's change since the read is never lost.
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
  renameSync,
  unlinkSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { sharedDirProblem } from "../../os/root_dir.ts";
import { MAX_CONFIG_BYTES } from "./conflist.ts";
import {
  type ConfigFile,
  confPath,
  equalBytes,
  errnoCode,
  readAt,
  sameStamp,
} from "./file_read.ts";

/** A directory or file the agent may not write through; `path` names it. */
export class UnsafeFileError extends Error {
  override name = "UnsafeFileError";
  constructor(readonly path: string, message: string) {
    super(message);
  }
}

// O_EXCL with O_CREAT never opens an existing file, nor follows a symlink at the name.
const CREATE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL |
  constants.O_NOFOLLOW;

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
