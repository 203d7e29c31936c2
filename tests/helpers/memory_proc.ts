/**
 * A /proc in memory (lib/os/proc.ts's ProcFs) for scans of many processes: a test writes a
 * hundred thousand processes without touching the disk, makes them vanish mid-scan, and
 * counts what the scan read. Texts are ASCII, so a read's bound in bytes is one in characters.
 */
import type { ProcFs } from "../../lib/os/proc.ts";

/** One process's files; an absent file cannot be read. */
export interface MemoryProcess {
  comm: string;
  /** NUL-separated, as the kernel shows it ("" for a kernel thread). */
  cmdline: string;
  /** The v2 cgroup path (written as its `0::` line). */
  cgroup?: string;
  /** Real and effective uid (default 0). */
  uid?: number;
  /** Mount ids its mountinfo lists (default the host's, 20 and 21). */
  mountIds?: number[];
}

/** A kubelet binary's lookalike in a pod's container cgroup. */
export function podLookalike(podIndex: number): MemoryProcess {
  return {
    comm: "kubelet",
    cmdline: "/usr/bin/kubelet\0--kubeconfig=/etc/kubernetes/kubelet.conf\0",
    cgroup: `/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${podIndex}.slice/` +
      `cri-containerd-${podIndex.toString(16).padStart(8, "0")}.scope`,
    uid: 0,
  };
}

export class MemoryProc implements ProcFs {
  readonly procs = new Map<number, MemoryProcess>();
  /** Reads per file name, and the longest text any read returned. */
  readonly reads = new Map<string, number>();
  longestRead = 0;
  /** Called before each read: a test makes a process vanish here. */
  beforeRead: (pid: number, name: string) => void = () => {};

  pids(): number[] {
    return [...this.procs.keys()];
  }

  read(pid: number, name: string, maxBytes: number): string | null {
    this.beforeRead(pid, name);
    this.reads.set(name, (this.reads.get(name) ?? 0) + 1);
    const p = this.procs.get(pid);
    if (!p) return null;
    const full = this.#file(p, name);
    if (full === null) return null;
    const text = full.length > maxBytes ? full.slice(0, maxBytes) : full;
    this.longestRead = Math.max(this.longestRead, text.length);
    return text;
  }

  readLink(): string | null {
    return null; // like the agent's container: no ptrace right, the mount ids answer
  }

  #file(p: MemoryProcess, name: string): string | null {
    switch (name) {
      case "comm":
        return p.comm + "\n";
      case "cmdline":
        return p.cmdline;
      case "cgroup":
        return p.cgroup === undefined ? null : `1:name=systemd:/\n0::${p.cgroup}\n`;
      case "status":
        return `Name:\t${p.comm}\nUid:\t${p.uid ?? 0}\t${p.uid ?? 0}\t0\t0\n`;
      case "mountinfo":
        return (p.mountIds ?? [20, 21]).map((id) => `${id} 1 0:21 / /m${id} rw - tmpfs t rw\n`)
          .join("");
      default:
        return null;
    }
  }
}
