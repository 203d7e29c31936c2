/**
 * Turns libbpf's negative errno returns into errors that name the operation,
 * the errno and what to do about it.
 */

/**
 * Linux errno numbers by name, for the errors BPF calls return (libbpf returns
 * them negated: compare `rc === -Errno.ENOENT`, never a bare number).
 */
export const Errno = {
  EPERM: 1,
  ENOENT: 2,
  ESRCH: 3,
  EINTR: 4,
  EIO: 5,
  E2BIG: 7,
  EBADF: 9,
  EAGAIN: 11,
  ENOMEM: 12,
  EACCES: 13,
  EFAULT: 14,
  EBUSY: 16,
  EEXIST: 17,
  EXDEV: 18,
  ENODEV: 19,
  ENOTDIR: 20,
  EISDIR: 21,
  EINVAL: 22,
  EMFILE: 24,
  ENOSPC: 28,
  EROFS: 30,
  ERANGE: 34,
  ENOSYS: 38,
  ELOOP: 40,
  ENOLINK: 67,
  EOPNOTSUPP: 95,
  ENETUNREACH: 101,
  ETIMEDOUT: 110,
  ECONNREFUSED: 111,
  EHOSTUNREACH: 113,
  EINPROGRESS: 115,
  ENOTSUPP: 524,
  LIBBPF_ERRNO__LOAD: 4003,
  LIBBPF_ERRNO__PROG2BIG: 4007,
  LIBBPF_ERRNO__KVER: 4008,
  LIBBPF_ERRNO__KVERSION: 4009,
} as const;

/** The name of each errno number in Errno. */
const ERRNO_NAMES: Readonly<Record<number, string>> = Object.fromEntries(
  Object.entries(Errno).map(([name, n]) => [n, name]),
);

/** What to do about each errno, in the context of a BPF call. */
const HINTS: Readonly<Record<string, string>> = {
  EPERM: "run as root or grant CAP_BPF and CAP_NET_ADMIN (and CAP_SYS_ADMIN on older kernels); " +
    "on a cgroup attach it can also mean an ancestor cgroup holds an exclusive (non multi) program",
  EACCES: "the verifier or the filesystem refused access: run as root and check the bpffs mount",
  ENOENT: "the pinned object or path does not exist: check the pin path and that bpffs is mounted",
  EINVAL: "the kernel rejected the arguments: the pinned map may have a different layout " +
    "(remove it with `lace uninstall`) or the kernel is too old for cgroup bpf_link (needs 5.7+)",
  E2BIG: "the map is full or a structure is larger than this kernel knows",
  ENOSPC: "the map is full: raise LACE_MAX_TARGETS or remove stale entries",
  ENOLINK: "the cgroup behind this link is gone: create a new link on the current cgroup",
  EBUSY: "the object is in use: another program is attached in a conflicting mode",
  EEXIST: "a pin already exists at this path: remove it or reuse it",
  EBADF: "a file descriptor was closed or is not a BPF object",
  ENOTDIR: "the path is not a directory",
  ENOMEM: "the kernel is out of memory for BPF objects, or RLIMIT_MEMLOCK is too low",
  EOPNOTSUPP: "the kernel does not support this operation (kernel too old or BPF disabled)",
  ENOTSUPP: "the kernel does not support this operation (kernel too old or BPF disabled)",
  ENOSYS: "the kernel has no bpf() system call: enable CONFIG_BPF_SYSCALL",
  LIBBPF_ERRNO__LOAD: "the verifier rejected the program: see the libbpf log lines above",
};

/** The symbolic name of an errno (positive or negative), or `errno <n>`. */
export function errnoName(errno: number): string {
  const n = Math.abs(errno);
  return ERRNO_NAMES[n] ?? `errno ${n}`;
}

/**
 * A failed BPF call: `operation` names what Lace tried (e.g. `bpf_link_create
 * connect4 on "/sys/fs/cgroup/x"`), `code` the errno name and `hint` what to do.
 */
export class BpfError extends Error {
  override name = "BpfError";
  readonly operation: string;
  readonly errno: number;
  readonly code: string;
  readonly hint: string;

  constructor(operation: string, errno: number, hint?: string) {
    const code = errnoName(errno);
    const advice = hint ?? HINTS[code] ?? "";
    super(`${operation} failed: ${code}${advice ? ` (${advice})` : ""}`);
    this.operation = operation;
    this.errno = Math.abs(errno);
    this.code = code;
    this.hint = advice;
  }
}

/**
 * Returns `rc` when it is zero or positive (a success or a file descriptor) and
 * throws a BpfError for a negative errno return, as libbpf 1.x gives them.
 */
export function unwrap(operation: string, rc: number): number {
  if (rc < 0) throw new BpfError(operation, rc);
  return rc;
}

/** True when `error` is a BpfError with one of the given errno names. */
export function isErrno(error: unknown, ...codes: string[]): error is BpfError {
  return error instanceof BpfError && codes.includes(error.code);
}
