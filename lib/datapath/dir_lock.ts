/**
 * flock(2) on bpffs directories (bpffs holds no regular files): one
 * exclusive lock on the pin path serialises what agents of different
 * releases do to the pins (open, migrate, swap, clean up), and a shared lock
 * on a layout's directory, held for an agent's life, says that an agent runs
 * on that layout. Whoever holds a lock has the directory open: Lace's agents
 * run as root, so a lock where only other users have it open is never an
 * agent's (a descriptor opened before an older release's 0755 directory was
 * made 0700; /proc/locks is no help, it names the process that took the lock,
 * which may be long gone).
 */
import { basename } from "node:path";
import { processComm, processUid } from "../os/proc.ts";
import {
  BpfError,
  closeFd,
  Errno,
  lastErrno,
  libcSymbols,
  LOCK_EX,
  LOCK_NB,
  LOCK_SH,
  openDirectory,
} from "../libbpf/mod.ts";

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

  /**
   * True when a lock on `path` may be an agent's: some process holds it, and
   * the processes that have the directory open are not all users other than
   * root (lockHolders). Lace's agents run as root.
   */
  static isHeldByRoot(path: string): boolean {
    return DirLock.isHeld(path) && lockHolders(DirLock.openers(path)) !== "strangers";
  }

  /**
   * The other processes that have the directory `path` open, from
   * /proc/PID/fd: whoever holds a lock on it is among them. Empty when none
   * can be seen (another pid namespace).
   */
  static openers(path: string, procRoot = "/proc"): Opener[] {
    let target: Deno.FileInfo;
    try {
      target = Deno.statSync(path);
    } catch {
      return [];
    }
    const name = basename(path);
    const out: Opener[] = [];
    for (const proc of Deno.readDirSync(procRoot)) {
      const pid = Number(proc.name);
      if (!Number.isInteger(pid) || pid <= 0 || pid === Deno.pid) continue;
      if (opensInode(`${procRoot}/${pid}/fd`, name, target)) {
        out.push({ pid, uid: processUid(pid, procRoot), comm: processComm(pid, procRoot) });
      }
    }
    return out;
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

/**
 * One non-blocking flock; false when another holder has it. `errnoOf` reads errno (a
 * parameter so tests can play a runtime that clobbered it).
 */
export function flockOnce(
  fd: number,
  op: number,
  path: string,
  errnoOf: () => number = lastErrno,
): boolean {
  const c = libcSymbols();
  let errno = 0;
  // Twice before an errno other than EAGAIN is believed: errno is only a hint (lastErrno),
  // and one V8 left behind would turn "another holder" into a failed start.
  for (let attempt = 0; attempt < 2; attempt++) {
    if (c.flock(fd, op) === 0) return true;
    errno = errnoOf();
    if (errno === Errno.EAGAIN) return false; // EWOULDBLOCK: another holder
  }
  closeFd(fd);
  throw new BpfError(`flock "${path}"`, -errno, "check that the pin path is a bpffs directory");
}

/** A process with a directory open: its uid and name are null when it is gone. */
export interface Opener {
  pid: number;
  uid: number | null;
  comm: string | null;
}

/**
 * Who may hold a lock on a directory, from the processes that have it open:
 * "strangers" when they are all users other than root (no agent: a
 * descriptor opened before the directory was 0700), "unseen" when none can
 * be seen, else "maybe-agent".
 */
export function lockHolders(openers: Opener[]): "strangers" | "unseen" | "maybe-agent" {
  if (openers.length === 0) return "unseen";
  return openers.every((o) => o.uid !== null && o.uid !== 0) ? "strangers" : "maybe-agent";
}

/** How openers read in an error: `pid 12 (uid 65534, sleep)`. */
export function describeOpeners(openers: Opener[]): string {
  return openers.map((o) => `pid ${o.pid} (uid ${o.uid ?? "?"}${o.comm ? `, ${o.comm}` : ""})`)
    .join(", ");
}

/**
 * Whether a process's fd directory holds a descriptor of `target`: only
 * descriptors whose path names it are stat'ed (never a socket, a pipe or
 * another file, whose stat could block on a hung filesystem).
 */
function opensInode(fdDir: string, name: string, target: Deno.FileInfo): boolean {
  let fds: Deno.DirEntry[];
  try {
    fds = [...Deno.readDirSync(fdDir)];
  } catch {
    return false; // gone, or not ours to read
  }
  for (const fd of fds) {
    try {
      const link = `${fdDir}/${fd.name}`;
      if (!Deno.readLinkSync(link).includes(name)) continue;
      const st = Deno.statSync(link);
      if (st.dev === target.dev && st.ino === target.ino) return true;
    } catch {
      // Closed meanwhile.
    }
  }
  return false;
}
