/**
 * Reading an open file descriptor whole, but never more than asked: the node's files (CNI
 * configuration, pod manifests) are read after a stat, one byte past its size, so a file still
 * being written, or grown since, is noticed rather than read without end.
 */
import { readSync } from "node:fs";

/** Reads `fd` from its position until end of file or `limit` bytes, whichever comes first. */
export function readUpTo(fd: number, limit: number): Uint8Array {
  const buf = new Uint8Array(limit);
  let length = 0;
  while (length < buf.length) {
    const n = readSync(fd, buf, length, buf.length - length, null);
    if (n === 0) break;
    length += n;
  }
  return buf.subarray(0, length);
}
