/** Plain file descriptors: closing BPF fds, opening cgroup directories, object info. */
import { BpfError } from "./errors.ts";
import { cString, O_CLOEXEC, O_DIRECTORY, O_RDONLY } from "./ffi.ts";
import { libbpfSymbols, libcSymbols } from "./library.ts";

/** Closes a file descriptor; negative values (already closed) are ignored. */
export function closeFd(fd: number): void {
  if (fd >= 0) libcSymbols().close(fd);
}

/**
 * Opens a directory read-only for use as a BPF attach target (a cgroup). The
 * caller checks the path first, so a failure here is reported without errno.
 */
export function openDirectory(path: string): number {
  const fd = libcSymbols().open(cString(path), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    throw new BpfError(
      `open directory "${path}"`,
      -2,
      "check that the directory exists and is readable",
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
