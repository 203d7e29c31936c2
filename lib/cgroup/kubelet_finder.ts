/**
 * Finds the kubelet among the node's processes and the cgroup it runs in.
 * Kubelets come as a `kubelet` binary (kubeadm, RKE2's child, kind, Talos), or
 * inside another binary: k3s (`k3s server` / `k3s agent`) and MicroK8s'
 * `kubelite`. The /proc root is a parameter so tests use fixture trees.
 */
import { basename } from "node:path";

export type KubeletKind = "kubelet" | "k3s" | "kubelite";

/** Name prefix of the child cgroups `lace doctor probes` connects from. */
export const DOCTOR_CGROUP_PREFIX = "lace-doctor-";

/** A process that runs the kubelet. */
export interface KubeletProcess {
  pid: number;
  comm: string;
  kind: KubeletKind;
  argv: string[];
  /** Its cgroup v2 path as /proc/PID/cgroup shows it (`0::` line), or null. */
  cgroup: string | null;
}

/** Any process, as listed from a cgroup. */
export interface ProcessInfo {
  pid: number;
  comm: string;
  /** The cgroup directory it was found in. */
  cgroupDir: string;
}

/**
 * Decides whether a process runs the kubelet, from its comm and argv. A
 * `k3s server --disable-agent` runs no kubelet. RKE2's supervisor is not the
 * kubelet: its kubelet is a child `kubelet` binary, found by that name.
 */
export function classifyProcess(comm: string, argv: readonly string[]): KubeletKind | null {
  // Some programs rewrite their title into argv[0] as one string with spaces.
  const args = argv.length === 1 && argv[0].includes(" ") ? argv[0].split(/\s+/) : [...argv];
  const exe = args.length > 0 ? basename(args[0]) : "";
  if (comm === "kubelet" || exe === "kubelet") return "kubelet";
  if (exe === "hyperkube" && args[1] === "kubelet") return "kubelet";
  if (comm === "kubelite" || exe === "kubelite") return "kubelite";
  const k3sRole = exe === "k3s" ? args[1] : comm.startsWith("k3s-") ? comm.slice(4) : undefined;
  if (k3sRole === "server" || k3sRole === "agent") {
    return args.includes("--disable-agent") ? null : "k3s";
  }
  return null;
}

/**
 * The cgroup v2 path of a /proc/PID/cgroup text: the `0::` line. Hybrid hosts
 * list v1 hierarchies too; they are ignored. Null when there is no v2 line.
 */
export function parseProcCgroup(text: string): string | null {
  for (const line of text.split("\n")) {
    if (line.startsWith("0::")) return line.slice(3).trim() || "/";
  }
  return null;
}

/** Splits a NUL-separated /proc/PID/cmdline. */
export function parseCmdline(raw: string): string[] {
  const parts = raw.split("\0");
  if (parts.length > 0 && parts[parts.length - 1] === "") parts.pop();
  return parts;
}

/** Orders candidates: a real kubelet binary first, then k3s/kubelite, then by pid. */
function rankKubelets(found: KubeletProcess[]): KubeletProcess[] {
  const order: Record<KubeletKind, number> = { kubelet: 0, k3s: 1, kubelite: 1 };
  return [...found].sort((a, b) => order[a.kind] - order[b.kind] || a.pid - b.pid);
}

function readOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    // The process exited between listing and reading, or is not ours to read.
    return null;
  }
}

function numericEntries(dir: string): number[] {
  const pids: number[] = [];
  for (const e of Deno.readDirSync(dir)) {
    if (/^\d+$/.test(e.name)) pids.push(Number(e.name));
  }
  return pids;
}

/** The cgroup v2 path of one process, or null when it is gone or has no v2 line. */
function readProcessCgroup(pid: number, procRoot = "/proc"): string | null {
  const text = readOrNull(`${procRoot}/${pid}/cgroup`);
  return text === null ? null : parseProcCgroup(text);
}

/** The comm (short name) of one process, or "?" when it is gone. */
export function readComm(pid: number, procRoot = "/proc"): string {
  return readOrNull(`${procRoot}/${pid}/comm`)?.trim() ?? "?";
}

/**
 * Scans `procRoot` for processes that run the kubelet, best candidate first.
 * Kernel threads (empty cmdline) and processes that vanish mid-scan are skipped.
 */
export function findKubelets(procRoot = "/proc"): KubeletProcess[] {
  const found: KubeletProcess[] = [];
  for (const pid of numericEntries(procRoot)) {
    const comm = readOrNull(`${procRoot}/${pid}/comm`)?.trim();
    const raw = readOrNull(`${procRoot}/${pid}/cmdline`);
    if (comm === undefined || raw === null || raw === "") continue;
    const argv = parseCmdline(raw);
    const kind = classifyProcess(comm, argv);
    if (!kind) continue;
    found.push({ pid, comm, kind, argv, cgroup: readProcessCgroup(pid, procRoot) });
  }
  return rankKubelets(found);
}

/**
 * Lists the processes in a cgroup directory and, with `recursive`, in every
 * cgroup below it. Reads `cgroup.procs`; a cgroup removed mid-walk is skipped.
 */
export function listCgroupProcesses(
  dir: string,
  { recursive = true, procRoot = "/proc" } = {},
): ProcessInfo[] {
  const out: ProcessInfo[] = [];
  const walk = (d: string) => {
    const procs = readOrNull(`${d}/cgroup.procs`);
    if (procs === null) return;
    for (const line of procs.split("\n")) {
      if (!/^\d+$/.test(line.trim())) continue;
      const pid = Number(line.trim());
      out.push({ pid, comm: readComm(pid, procRoot), cgroupDir: d });
    }
    if (!recursive) return;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(d)];
    } catch {
      return;
    }
    for (const e of entries) if (e.isDirectory) walk(`${d}/${e.name}`);
  };
  walk(dir);
  return out;
}

/**
 * The processes of a cgroup tree that are not the kubelet: they would be
 * tagged too. A process counts as the kubelet when classifyProcess says so.
 */
export function extraProcesses(
  dir: string,
  { procRoot = "/proc", exclude = [] as number[] } = {},
): ProcessInfo[] {
  return listCgroupProcesses(dir, { procRoot }).filter((p) => {
    if (exclude.includes(p.pid)) return false;
    // `lace doctor probes` connects from short-lived children named so.
    if (basename(p.cgroupDir).startsWith(DOCTOR_CGROUP_PREFIX)) return false;
    const raw = readOrNull(`${procRoot}/${p.pid}/cmdline`);
    if (raw === null) return false;
    return classifyProcess(p.comm, parseCmdline(raw)) === null;
  });
}
