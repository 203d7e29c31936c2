/**
 * flock(2) on bpffs directories (bpffs holds no regular files): one
 * exclusive lock on the pin path serialises what agents of different
 * releases do to the pins (open, migrate, swap, clean up), and a shared lock
 * on a layout's directory, held for an agent's life, says that an agent runs
 * on that layout.
 */
import { BpfError, Errno } from "./libbpf/errors.ts";
import { closeFd, openDirectory } from "./libbpf/fd.ts";
import { LOCK_EX, LOCK_NB, LOCK_SH } from "./libbpf/ffi.ts";
import { lastErrno, libcSymbols } from "./libbpf/library.ts";

/** A held flock on a directory; released on close (and by the kernel when the process dies). */
export class DirLock implements Disposable {
  #fd: number;
  readonly path: string;

  private constructor(fd: number, path: string) {
    this.#fd = fd;
    this.path = path;
  }

  /**
   * Takes `mode` on `path`, retrying every few milliseconds until `timeoutMs`;
   * undefined when another holder keeps it that long.
   */
  static tryTake(path: string, mode: "shared" | "exclusive", timeoutMs = 0): DirLock | undefined {
    const fd = openDirectory(path);
    const deadline = performance.now() + timeoutMs;
    const pause = new Int32Array(new SharedArrayBuffer(4));
    for (;;) {
      if (flockOnce(fd, (mode === "shared" ? LOCK_SH : LOCK_EX) | LOCK_NB, path)) {
        return new DirLock(fd, path);
      }
      if (performance.now() >= deadline) {
        closeFd(fd);
        return undefined;
      }
      // The holders are other processes doing a few syscalls: a short synchronous wait.
      Atomics.wait(pause, 0, 0, 5);
    }
  }

  /** True when some process holds a lock on `path` (it cannot be taken exclusively now). */
  static isHeld(path: string): boolean {
    using probe = DirLock.tryTake(path, "exclusive");
    return probe === undefined;
  }

  /** Releases the lock. Safe to call twice. */
  close(): void {
    closeFd(this.#fd);
    this.#fd = -1;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}

/** One non-blocking flock; false when another holder has it. */
function flockOnce(fd: number, op: number, path: string): boolean {
  const c = libcSymbols();
  if (c.flock(fd, op) === 0) return true;
  const errno = lastErrno();
  if (errno === Errno.EAGAIN) return false; // EWOULDBLOCK: another holder
  closeFd(fd);
  throw new BpfError(`flock "${path}"`, -errno, "check that the pin path is a bpffs directory");
}
