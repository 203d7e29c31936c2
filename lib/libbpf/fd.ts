/** Plain file descriptors: closing BPF fds, opening cgroup directories and pins, object info. */
import { BpfError, unwrap } from "./errors.ts";
import { cString, O_CLOEXEC, O_DIRECTORY, O_RDONLY } from "./ffi.ts";
import { lastErrno, libbpfSymbols, libcSymbols } from "./library.ts";

/** Closes a file descriptor; negative values (already closed) are ignored. */
export function closeFd(fd: number): void {
  if (fd >= 0) libcSymbols().close(fd);
}

/**
 * Opens a directory read-only for use as a BPF attach target (a cgroup). A
 * failure reports open(2)'s own errno (ENOENT, ENOTDIR, EACCES...).
 */
export function openDirectory(path: string): number {
  const fd = libcSymbols().open(cString(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw new BpfError(
      `open directory "${path}"`,
      -lastErrno(),
      "check that the directory exists and is readable",
    );
  }
  return fd;
}

/** The kinds of BPF object a file descriptor can hold. */
export type BpfObjectKind = "map" | "prog" | "link" | "btf";

/**
 * What kind of BPF object `fd` holds, from the name of its anonymous inode
 * (`anon_inode:bpf-map`, `bpf-prog`, `bpf_link`, `btf`); undefined when it is
 * no BPF object. bpf_obj_get opens any pinned kind, so callers check this.
 */
function bpfObjectKind(fd: number): BpfObjectKind | undefined {
  const target = Deno.readLinkSync(`/proc/self/fd/${fd}`);
  const kind = /^anon_inode:(?:bpf[-_](map|prog|link)|(btf))$/.exec(target);
  return (kind?.[1] ?? kind?.[2]) as BpfObjectKind | undefined;
}

/**
 * Opens the object pinned at `path` and checks that it is of the `expected`
 * kind; a pin of another kind is closed again and refused with a TypeError
 * that names what is there.
 */
export function openPinnedObject(path: string, expected: BpfObjectKind): number {
  const fd = unwrap(`bpf_obj_get "${path}"`, libbpfSymbols().bpf_obj_get(cString(path)));
  let kind: BpfObjectKind | undefined;
  try {
    kind = bpfObjectKind(fd);
  } catch (e) {
    closeFd(fd);
    throw e;
  }
  if (kind !== expected) {
    closeFd(fd);
    throw new TypeError(
      `The pin "${path}" holds a BPF ${kind ?? "object of unknown kind"}, not a ${expected}: ` +
        "something else pinned it there; remove that pin or choose another --pin-path",
    );
  }
  return fd;
}

/**
 * Reads a BPF object's info struct (struct bpf_prog_info, bpf_map_info or
 * bpf_link_info) into `size` zero-filled bytes; the kernel fills what it knows.
 */
export function objectInfo(fd: number, size: number, what: string): DataView {
  const info = new Uint8Array(new ArrayBuffer(size));
  const len = new Uint32Array([size]);
  const rc = libbpfSymbols().bpf_obj_get_info_by_fd(fd, info, new Uint8Array(len.buffer));
  if (rc < 0) throw new BpfError(`bpf_obj_get_info_by_fd ${what}`, rc);
  return new DataView(info.buffer);
}
