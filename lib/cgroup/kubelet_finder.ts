/**
 * Finds the kubelet-looking processes of the node and the facts that decide
 * whether one may be trusted as the kubelet (kubelet_trust.ts): its cgroup,
 * its user and whether it shares the host's mount namespace.
 * Kubelets come as a `kubelet` binary (kubeadm, RKE2's child, kind, Talos), or
 * inside another binary: k3s (`k3s server` / `k3s agent`) and MicroK8s'
 * `kubelite`. The /proc root is a parameter so tests use fixture trees.
 */
import { basename } from "node:path";
import { parseStatusUid, procDir, type ProcFs } from "../os/proc.ts";
import { containerCgroupReason, distrustReason } from "./kubelet_trust.ts";
import type { KubeletKind, KubeletProcess } from "./kubelet_process.ts";

/** Name prefix of the child cgroups `lace doctor probes` connects from. */
export const DOCTOR_CGROUP_PREFIX = "lace-doctor-";

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
 * Says which Kubernetes API server a process is, from its comm and argv, or
 * null. k3s servers and MicroK8s' kubelite run the API server in the same
 * process as the kubelet; kubeadm and RKE2 run `kube-apiserver` (as a static
 * pod, normally outside the kubelet's cgroup).
 */
export function describeApiServer(comm: string, argv: readonly string[]): string | null {
  const args = argv.length === 1 && argv[0].includes(" ") ? argv[0].split(/\s+/) : [...argv];
  const exe = args.length > 0 ? basename(args[0]) : "";
  if (comm === "kube-apiserver" || exe === "kube-apiserver") return "kube-apiserver";
  if (exe === "hyperkube" && ["apiserver", "kube-apiserver"].includes(args[1])) {
    return "kube-apiserver";
  }
  if (comm === "k3s-server" || (exe === "k3s" && args[1] === "server")) {
    return "k3s server, which runs the API server in the kubelet's process";
  }
  if (comm === "kubelite" || exe === "kubelite") {
    return "MicroK8s kubelite, which runs the API server in the kubelet's process";
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

/** The mount ids (first field) of a /proc/PID/mountinfo text. */
export function parseMountIds(text: string): Set<number> {
  const ids = new Set<number>();
  for (const line of text.split("\n")) {
    const id = /^(\d+) /.exec(line);
    if (id) ids.add(Number(id[1]));
  }
  return ids;
}

/** What tells one mount namespace from another, for one process. */
export interface MountNamespaceView {
  /** The /proc/PID/ns/mnt link ("mnt:[4026531841]"); null when not readable (no ptrace right). */
  link: string | null;
  /** The ids of the mounts it sees; null when not readable. */
  mountIds: Set<number> | null;
}

/**
 * Whether two processes share a mount namespace; null when it cannot be told. The ns links
 * answer directly, but reading them needs ptrace rights the agent's container lacks. Mount ids
 * are the fallback: a mount belongs to one namespace, and a new namespace gets copies with new
 * ids, so two processes share a namespace exactly when they see a common mount id.
 */
export function sameMountNamespace(a: MountNamespaceView, b: MountNamespaceView): boolean | null {
  if (a.link !== null && b.link !== null) return a.link === b.link;
  if (a.mountIds === null || b.mountIds === null) return null;
  for (const id of a.mountIds) if (b.mountIds.has(id)) return true;
  return false;
}

function readOrNull(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    // The process exited between listing and reading, or is not ours to read.
    return null;
  }
}

/** The comm (short name) of one process, or "?" when it is gone. */
export function readComm(pid: number, procRoot = "/proc"): string {
  return readOrNull(`${procRoot}/${pid}/comm`)?.trim() ?? "?";
}

/**
 * Kubelet-looking processes a scan keeps in full beyond the trusted ones: any pod can start
 * thousands of processes named kubelet, and each kept one lives in the follower's status, its
 * /readyz and `lace doctor` texts and a Node Event. The others are counted.
 */
export const MAX_LOOKALIKES = 32;
/** Bytes of a cmdline read: a kubelet's flags fit many times; its owner chooses the length. */
export const CMDLINE_MAX_BYTES = 16 * 1024;
/** Bytes of /proc/PID/cgroup read; a v2 line cut off by the bound counts as no line. */
export const CGROUP_MAX_BYTES = 8 * 1024;
/** comm is at most 16 bytes in the kernel; the bound holds for any ProcFs. */
const COMM_MAX_BYTES = 64;
/** A mountinfo lists every mount of its namespace: a busy node's runs to hundreds of KiB. */
const MOUNTINFO_MAX_BYTES = 4 * 1024 * 1024;

/** One process's mount namespace view (only kubelet candidates and PID 1 are read). */
function readMountNamespaceView(proc: ProcFs, pid: number): MountNamespaceView {
  const text = proc.read(pid, "mountinfo", MOUNTINFO_MAX_BYTES);
  return {
    link: proc.readLink(pid, "ns/mnt"),
    mountIds: text === null ? null : parseMountIds(text),
  };
}

/** What one scan of /proc found; see findKubelets(). */
export interface KubeletScan {
  /** Every candidate that may be the kubelet, and the first `maxLookalikes` others by pid. */
  found: KubeletProcess[];
  /** The kubelet-looking processes beyond those: counted, not kept. */
  lookalikesNotListed: number;
}

/**
 * Scans /proc (a directory, or any ProcFs) for processes that look like the kubelet, by pid,
 * with the facts judgeKubelets() (kubelet_trust.ts) decides on; the host's mount namespace is
 * PID 1's. Kernel threads (empty cmdline) and processes that vanish mid-scan are skipped. What
 * a tenant can drive is bounded: every read (a cmdline is read up to CMDLINE_MAX_BYTES, what
 * lies beyond does not count), the work per lookalike (one in a container or pod cgroup is not
 * asked for its user and mounts: its cgroup already rules it out) and the lookalikes kept (the
 * first `maxLookalikes`, the rest counted). Candidates that may be trusted are all kept, so no
 * number of lookalikes can push the kubelet out.
 */
export function findKubelets(
  procRoot: string | ProcFs = "/proc",
  { maxLookalikes = MAX_LOOKALIKES } = {},
): KubeletScan {
  const proc = typeof procRoot === "string" ? procDir(procRoot) : procRoot;
  const found: KubeletProcess[] = [];
  let lookalikes = 0;
  let host: MountNamespaceView | undefined;
  for (const pid of proc.pids().sort((a, b) => a - b)) {
    const comm = proc.read(pid, "comm", COMM_MAX_BYTES)?.trim();
    const raw = proc.read(pid, "cmdline", CMDLINE_MAX_BYTES);
    if (comm === undefined || raw === null || raw === "") continue;
    const argv = parseCmdline(raw);
    const kind = classifyProcess(comm, argv);
    if (!kind) continue;
    const cgroupText = proc.read(pid, "cgroup", CGROUP_MAX_BYTES);
    // Only whole lines: a line cut off by the bound would be another path.
    const cgroup = cgroupText === null
      ? null
      : parseProcCgroup(cgroupText.slice(0, cgroupText.lastIndexOf("\n") + 1));
    const k: KubeletProcess = {
      pid,
      comm,
      kind,
      argv,
      cgroup,
      uid: null,
      hostMountNamespace: null,
    };
    if (cgroup !== null && containerCgroupReason(cgroup) === null) {
      host ??= readMountNamespaceView(proc, 1);
      const status = proc.read(pid, "status", 64 * 1024);
      k.uid = status === null ? null : parseStatusUid(status);
      k.hostMountNamespace = sameMountNamespace(host, readMountNamespaceView(proc, pid));
    }
    // Gone by now (a short-lived lookalike, a restarting kubelet): nothing to follow or report.
    if (proc.read(pid, "comm", COMM_MAX_BYTES) === null) continue;
    if (distrustReason(k) !== null && ++lookalikes > maxLookalikes) continue;
    found.push(k);
  }
  return { found, lookalikesNotListed: Math.max(0, lookalikes - maxLookalikes) };
}

/**
 * The pids of a cgroup.procs text, and how many lines were 0: the kernel lists a process of
 * another pid namespace than the reader's as 0, which is no pid to read /proc for.
 */
export function parseCgroupProcs(text: string): { pids: number[]; hidden: number } {
  const pids: number[] = [];
  let hidden = 0;
  for (const line of text.split("\n")) {
    if (!/^\d+$/.test(line.trim())) continue;
    const pid = Number(line.trim());
    if (pid === 0) hidden++;
    else pids.push(pid);
  }
  return { pids, hidden };
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
    for (const pid of parseCgroupProcs(procs).pids) {
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

/** A process of a cgroup tree that serves the Kubernetes API (see describeApiServer()). */
export interface ApiServerProcess extends ProcessInfo {
  what: string;
}

/**
 * The processes of a cgroup tree that serve the Kubernetes API, the kubelet
 * itself included when it embeds one (k3s server, kubelite): their
 * connections to probe targets are tagged like the kubelet's.
 */
export function apiServerProcesses(dir: string, procRoot = "/proc"): ApiServerProcess[] {
  return listCgroupProcesses(dir, { procRoot }).flatMap((p) => {
    const raw = readOrNull(`${procRoot}/${p.pid}/cmdline`);
    const what = raw === null ? null : describeApiServer(p.comm, parseCmdline(raw));
    return what === null ? [] : [{ ...p, what }];
  });
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
