/**
 * Reading one file of the pods directory as untrusted input: only a regular
 * file, only inside the directory, only up to a size cap. A FIFO would block
 * a plain open() forever and a symlink to /dev/zero would be read until memory
 * runs out; both are refused here before a byte is read. The calls are
 * synchronous: a manifest is a few KiB on the node's own disk, and each awaited
 * call would wait its turn on a busy node's event loop between a file's rename
 * and its pods' targets (bench figure 2).
 */
import { closeSync, constants, fstatSync, openSync } from "node:fs";
import { readUpTo } from "../os/read_fd.ts";

/** Largest manifest file read; a Pod manifest is a few KiB, a list of hundreds well under this. */
export const MAX_MANIFEST_BYTES = 1024 * 1024;

/**
 * A file that can never be used as it is (not a regular file, a symlink out of
 * the directory, too large). Unlike a file that does not parse yet (it may be
 * half written), its pods are dropped and the reason logged.
 */
export class UnusableManifestError extends Error {
  override name = "UnusableManifestError";
}

// O_NONBLOCK: opening a FIFO returns at once instead of waiting for a writer.
// O_NOFOLLOW: the path opened is the resolved one, so a last-moment symlink is refused.
const OPEN_FLAGS = constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW;

/**
 * Reads `name` in the directory whose real path is `realDir`. Resolves null
 * when the file is gone; throws UnusableManifestError when it is not a
 * regular file, resolves outside `realDir` (a symlink inside it, such as a
 * ConfigMap volume's `..data` links, is fine), is larger than `maxBytes` or
 * `vet` (given the opened file's owner and mode) says why not;
 * throws the I/O error otherwise.
 */
export function readManifestFile(
  realDir: string,
  name: string,
  maxBytes = MAX_MANIFEST_BYTES,
  vet?: (stat: { uid: number; mode: number }) => string | undefined,
): string | null {
  let real: string;
  try {
    real = Deno.realPathSync(`${realDir}/${name}`);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null; // removed, or a dangling symlink
    throw error;
  }
  if (!real.startsWith(`${realDir}/`)) {
    throw new UnusableManifestError(`it is a symlink to "${real}", outside the pods directory`);
  }
  let fd: number;
  try {
    fd = openSync(real, OPEN_FLAGS);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return null;
    throw error;
  }
  try {
    const info = fstatSync(fd);
    if (!info.isFile()) {
      throw new UnusableManifestError(`it is a ${fileKind(info)}, not a regular file`);
    }
    // The opened file's own owner and mode (fstat): the file read is the file judged.
    const refused = vet?.({ uid: info.uid, mode: info.mode });
    if (refused) throw new UnusableManifestError(refused);
    if (info.size > maxBytes) {
      throw new UnusableManifestError(`it is ${info.size} bytes, more than ${maxBytes}`);
    }
    // One byte more than stat said, to notice a file still being written.
    const bytes = readUpTo(fd, info.size + 1);
    if (bytes.length > info.size) {
      throw new Error("it grew while being read (it is being written; the watch reads it again)");
    }
    return new TextDecoder().decode(bytes);
  } finally {
    closeSync(fd);
  }
}

function fileKind(info: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}): string {
  if (info.isDirectory()) return "directory";
  if (info.isFIFO()) return "FIFO";
  if (info.isCharacterDevice()) return "character device";
  if (info.isBlockDevice()) return "block device";
  if (info.isSocket()) return "socket";
  return "special file";
}
