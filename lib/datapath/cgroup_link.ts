/**
 * One program on one cgroup through a bpf_link: creating the link (with an
 * EPERM that says what to do) and swapping the program of a live link in
 * place, which leaves no moment without a program.
 */
import { getLogger } from "@logtape/logtape";
import { BpfError, BpfLink, type BpfProgram, Errno, isErrno } from "../libbpf/mod.ts";

const log = getLogger(["lace", "datapath"]);

/**
 * Links `prog` to the cgroup open at `cgroupFd`. An EPERM names both causes:
 * missing capabilities, or a program above it attached without
 * BPF_F_ALLOW_MULTI.
 */
export function createLink(
  prog: BpfProgram,
  cgroupFd: number,
  attachType: number,
  label: string,
): BpfLink {
  try {
    return BpfLink.create(prog.fd, cgroupFd, attachType, label);
  } catch (e) {
    if (isErrno(e, "EPERM")) {
      throw new BpfError(
        `bpf_link_create ${label}`,
        -Errno.EPERM,
        "run as root (CAP_BPF and CAP_NET_ADMIN); if already root, this cgroup or an ancestor " +
          "holds a program attached without BPF_F_ALLOW_MULTI, which forbids more programs below it",
      );
    }
    throw e;
  }
}

/** Swaps the program of a live link on `cgroupId`; false when a new link is needed. */
export function updateInPlace(link: BpfLink, prog: BpfProgram, cgroupId: bigint): boolean {
  const info = link.info();
  if (info.cgroupId === 0n || info.cgroupId !== cgroupId) {
    log.info("Pinned link {link} is on cgroup id {old}, not {cgroupId}: replacing it", {
      link: link.label,
      old: String(info.cgroupId),
      cgroupId: String(cgroupId),
    });
    return false;
  }
  try {
    link.update(prog.fd);
    return true;
  } catch (e) {
    if (!isErrno(e, "ENOLINK")) throw e;
    log.info("Pinned link {link} lost its cgroup: replacing it", { link: link.label });
    return false;
  }
}
