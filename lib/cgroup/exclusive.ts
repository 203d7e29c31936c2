/**
 * Explains an EPERM from attaching to a cgroup: the kernel refuses a
 * multi-attach link when the cgroup itself, or an ancestor, holds an
 * exclusive (non-multi) program of the same attach type. Lace never detaches
 * other programs, so the operator has to act; this module says which cgroup
 * holds what. The walk mirrors the kernel's hierarchy_allows_attach().
 */
import { dirname } from "node:path";
import { isWithin } from "./path.ts";
import { BpfError, closeFd, libbpfSymbols, openDirectory } from "../libbpf/mod.ts";
import { PROGRAM_NAMES, type ProgramName, PROGRAMS } from "../datapath/pins.ts";

/** Flags of BPF_PROG_ATTACH / BPF_PROG_QUERY (include/uapi/linux/bpf.h). */
export const BPF_F_ALLOW_OVERRIDE = 1;
export const BPF_F_ALLOW_MULTI = 2;

/** What is attached directly to one cgroup for one attach type. */
export interface CgroupAttachments {
  flags: number;
  progIds: number[];
}

/** Reads a cgroup's own attachments of a type (BPF_PROG_QUERY without EFFECTIVE). */
export type AttachQuery = (cgroupDir: string, type: ProgramName) => CgroupAttachments;

/** The cgroup whose exclusive program blocks a multi-attach below it. */
export interface ExclusiveHolder {
  cgroup: string;
  attachType: ProgramName;
  flags: number;
  progIds: number[];
}

/**
 * Finds the cgroup that makes a multi-attach on `cgroupDir` fail: the cgroup
 * itself when it holds a non-multi program, else the nearest ancestor (up to
 * `rootDir`, the cgroup2 mount) that holds programs without ALLOW_OVERRIDE,
 * unless a multi ancestor comes first. Null when the hierarchy allows it.
 */
export function findExclusiveHolder(
  cgroupDir: string,
  rootDir: string,
  query: AttachQuery,
  types: readonly ProgramName[] = PROGRAM_NAMES,
): ExclusiveHolder | null {
  for (const attachType of types) {
    const own = query(cgroupDir, attachType);
    if (own.progIds.length > 0 && !(own.flags & BPF_F_ALLOW_MULTI)) {
      return { cgroup: cgroupDir, attachType, ...own };
    }
    let dir = cgroupDir;
    while (dir !== rootDir && isWithin(dir, rootDir)) {
      dir = dirname(dir);
      const a = query(dir, attachType);
      if (a.flags & BPF_F_ALLOW_MULTI) break;
      if (a.progIds.length === 0) continue;
      if (a.flags & BPF_F_ALLOW_OVERRIDE) break;
      return { cgroup: dir, attachType, ...a };
    }
  }
  return null;
}

/** The operator-facing sentence for an exclusive holder. */
export function describeExclusiveHolder(target: string, holder: ExclusiveHolder): string {
  const ids = holder.progIds.join(", ");
  const where = holder.cgroup === target ? "the cgroup itself" : `its ancestor "${holder.cgroup}"`;
  return `Cannot attach to kubelet cgroup "${target}": the kernel refused with EPERM because ` +
    `${where} holds an exclusive (non-multi) ${holder.attachType} program (id ${ids}), ` +
    "which forbids other programs below it; Lace never detaches other programs: " +
    `re-attach that program with the multi flag, or remove it (\`bpftool cgroup detach ${holder.cgroup} ` +
    `${holder.attachType} id ${holder.progIds[0]}\`) if nothing needs it`;
}

/**
 * Reads a cgroup's own attachments through BPF_PROG_QUERY (libbpf
 * bpf_prog_query). Needs the same privileges as attaching.
 */
export function queryAttachments(cgroupDir: string, type: ProgramName): CgroupAttachments {
  const fd = openDirectory(cgroupDir);
  try {
    const flags = new Uint32Array(1);
    const ids = new Uint32Array(64);
    const count = new Uint32Array([ids.length]);
    const rc = libbpfSymbols().bpf_prog_query(
      fd,
      PROGRAMS.find((p) => p.name === type)!.attachType,
      0,
      new Uint8Array(flags.buffer),
      new Uint8Array(ids.buffer),
      new Uint8Array(count.buffer),
    );
    if (rc < 0) throw new BpfError(`bpf_prog_query ${type} on "${cgroupDir}"`, rc);
    return { flags: flags[0], progIds: [...ids.subarray(0, Math.min(count[0], ids.length))] };
  } finally {
    closeFd(fd);
  }
}
