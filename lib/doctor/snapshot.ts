/**
 * Gathers what `lace doctor` checks: pins, links and maps under the pin path
 * (read-only, nothing is loaded or changed), mounts, the kubelet process and
 * cgroup, and the running agent's health endpoints. Every read is guarded: a
 * failure becomes a value the checks explain, never an exception.
 */
import { join } from "node:path";
import { bpfObjectBytes, objectSha256 } from "../datapath/bpf_object.ts";
import { objectAbiVersion } from "../datapath/object_abi.ts";
import { cgroup2Mounts, mapConfiguredCgroup, mapProcessCgroup } from "../cgroup/path.ts";
import {
  pathExists,
  pinnedLayouts,
  pinnedLinkStatus,
  PROGRAM_NAMES,
  readPinnedCounters,
  readPinnedInfo,
  readPinnedTargets,
} from "../datapath/pins.ts";
import { statCgroupId } from "../os/cgroupfs.ts";
import type { LinkSnapshot, NodeSnapshot } from "./check.ts";
import type { AddressesView, ChainingView, TargetView, UnmatchedView } from "../agent_api/views.ts";
import { getFromAgent } from "../agent_api/client.ts";
import { apiServerProcesses, extraProcesses, findKubelets } from "../cgroup/kubelet_finder.ts";
import { judgeKubelets } from "../cgroup/kubelet_trust.ts";
import { bpffsMountPoints, type Mount, mountOf, readMountInfo } from "../os/mountinfo.ts";
import { errorText } from "../text/error.ts";
import { chainStatus } from "../cni/chaining/status.ts";
import { pluginProblem } from "../cni/chaining/plugin.ts";
import { rootDirProblem } from "../os/root_dir.ts";
import { podsDirProblem } from "../pods/dir_trust.ts";
import { DirLock } from "../datapath/dir_lock.ts";

export interface DoctorOptions {
  pinPath: string;
  kubeletCgroup: string;
  hostCgroupRoot: string;
  /** The agent's local socket, where its health and view are asked for. */
  agentSocket: string;
  /** The runtime's CNI configuration directory, checked for the lace plugin; empty: not. */
  cniConfDir?: string;
  /** The agent's chaining state directory, checked with it for who may write it. */
  cniStateDir?: string;
  /** The runtime's CNI bin directory, checked with it for the lace plugin; empty: not. */
  cniBinDir?: string;
  /** The agent's --pods-dir, checked for who may write it; empty: not. */
  podsDir?: string;
  /** For tests: a fixture /proc and mount table. */
  procRoot?: string;
  mounts?: Mount[];
  /** How long each request to the agent may take. */
  httpTimeoutMs?: number;
}

function errorOf(e: unknown): { error: string } {
  return { error: errorText(e) };
}

/** Collects the snapshot the checks evaluate. */
export async function gatherSnapshot(o: DoctorOptions): Promise<NodeSnapshot> {
  const mounts = o.mounts ?? readMountInfo();
  const kubelet = resolveKubeletCgroup(o.kubeletCgroup, o.hostCgroupRoot, mounts, o.procRoot);
  const v2 = cgroup2Mounts(mounts, o.hostCgroupRoot).map((m) => m.mountPoint);
  let links: NodeSnapshot["links"];
  try {
    links = PROGRAM_NAMES.map((p): LinkSnapshot => {
      const l = pinnedLinkStatus(o.pinPath, p);
      return {
        program: p,
        pinned: l.pinned,
        alive: l.alive,
        cgroupId: l.cgroupId,
        progId: l.progId,
      };
    });
  } catch (e) {
    links = errorOf(e);
  }
  // The maps of any layout: abi<N>/ or, from the release before layouts were versioned, flat.
  const layouts = (() => {
    try {
      return pinnedLayouts(o.pinPath).filter((l) => pathExists(join(l.dir, "probe_targets")));
    } catch {
      return [];
    }
  })();
  const mapPinned = layouts.length > 0;
  const agent = await agentState(o.agentSocket, o.httpTimeoutMs ?? 1500);
  return {
    pinPath: o.pinPath,
    bpffsMounts: bpffsMountPoints(mounts),
    pinPathFsType: fsTypeAt(o.pinPath, mounts),
    bpffsModes: bpffsMountPoints(mounts).map((mountPoint) => ({
      mountPoint,
      mode: modeOf(mountPoint),
    })),
    pinDirProblems: pinDirProblems(o.pinPath, layouts),
    pinDirOpeners: pinDirOpeners(o.pinPath),
    mapPinned,
    layouts: layouts.map((l) => l.abi),
    links,
    info: guard(() => {
      if (!mapPinned) throw new Error(`no info map under "${o.pinPath}"`);
      const i = readPinnedInfo(o.pinPath);
      return i ? { abiVersion: i.abiVersion, objectSha256: i.objectSha256 } : null;
    }),
    binarySha256: guard(() => objectSha256(bpfObjectBytes())),
    binaryAbi: (() => {
      try {
        return objectAbiVersion(bpfObjectBytes());
      } catch {
        return null; // binarySha256 says why
      }
    })(),
    cgroup2Mounts: v2,
    kubeletCgroup: {
      configured: kubelet.configured,
      path: kubelet.path,
      error: kubelet.error,
      id: kubelet.id,
    },
    kubelets: kubelet.kubelets,
    otherKubelets: kubelet.otherKubelets,
    otherKubeletsNotListed: kubelet.otherKubeletsNotListed,
    apiServers: kubelet.id === null || kubelet.path === null
      ? []
      : apiServerProcesses(kubelet.path, o.procRoot),
    extraProcesses: kubelet.id === null || kubelet.path === null ? [] : extraProcesses(
      kubelet.path,
      { procRoot: o.procRoot, exclude: kubelet.kubelets.map((k) => k.pid) },
    ),
    agent,
    mapEntries: mapPinned
      ? guard(() => readPinnedTargets(o.pinPath).length)
      : { error: `no probe map pinned under "${o.pinPath}"` },
    counters: guard(() => readPinnedCounters(o.pinPath)),
    cgroupPathOf: (id) => findCgroupById(v2, id),
    // The runtime's file by the rule of the runtime the agent found (CRI-O's when unknown).
    ...(o.cniConfDir
      ? {
        cniChaining: chainStatus(
          o.cniConfDir,
          o.cniStateDir || undefined,
          agent.chaining?.runtime.runtime,
        ),
      }
      : {}),
    ...(o.cniConfDir && o.cniBinDir
      ? { cniPlugin: { dir: o.cniBinDir, problem: pluginProblem(o.cniBinDir) } }
      : {}),
    ...(o.podsDir
      ? { podsDir: { dir: o.podsDir, problem: podsDirProblem(o.podsDir, undefined, mounts) } }
      : {}),
  };
}

function guard<T>(f: () => T): T | { error: string } {
  try {
    return f();
  } catch (e) {
    return errorOf(e);
  }
}

async function agentState(socket: string, timeoutMs: number): Promise<NodeSnapshot["agent"]> {
  const state: NodeSnapshot["agent"] = {
    addr: socket,
    healthz: null,
    readyz: null,
    targets: null,
    unmatched: null,
    addresses: null,
    error: null,
  };
  if (!socket) {
    state.error = "no --agent-socket given: cannot ask the agent";
    return state;
  }
  const get = (path: string) => getFromAgent(socket, path, timeoutMs);
  try {
    state.healthz = (await get("/healthz")).status;
    state.readyz = await get("/readyz");
    const t = await get("/targets");
    if (t.status === 200) state.targets = JSON.parse(t.body) as TargetView[];
    const u = await get("/unmatched");
    if (u.status === 200) state.unmatched = JSON.parse(u.body) as UnmatchedView[];
    const s = await get("/addresses");
    if (s.status === 200) state.addresses = JSON.parse(s.body) as AddressesView;
    const c = await get("/chaining");
    if (c.status === 200) state.chaining = JSON.parse(c.body) as ChainingView;
  } catch (e) {
    state.error ??= `no agent answers on ${socket}: ${
      e instanceof Error ? e.message.split(":")[0] : String(e)
    }`;
  }
  return state;
}

/**
 * Resolves the kubelet cgroup like the follower does: configured path or the cgroup of the
 * kubelet it would trust; the kubelet-looking processes it would not trust come apart.
 */
export function resolveKubeletCgroup(
  configured: string,
  hostRoot: string,
  mounts: Mount[],
  procRoot?: string,
):
  & NodeSnapshot["kubeletCgroup"]
  & Pick<NodeSnapshot, "kubelets" | "otherKubelets" | "otherKubeletsNotListed"> {
  const scan = findKubelets(procRoot);
  const { trusted, distrusted } = judgeKubelets(scan.found);
  const kubelets = trusted.flatMap((k) => {
    if (k.cgroup === null) return [];
    try {
      return [{
        pid: k.pid,
        comm: k.comm,
        cgroupDir: mapProcessCgroup(k.cgroup, mounts, hostRoot),
      }];
    } catch {
      return [{ pid: k.pid, comm: k.comm, cgroupDir: k.cgroup }];
    }
  });
  let path: string | null = null;
  let error: string | null = null;
  try {
    if (configured === "auto") {
      path = kubelets[0]?.cgroupDir ?? null;
      if (path === null) error = "no trusted kubelet process found to take the cgroup from (auto)";
    } else {
      path = mapConfiguredCgroup(configured, mounts, hostRoot);
    }
  } catch (e) {
    error = (e as Error).message;
  }
  let id: bigint | null = null;
  if (path !== null) {
    id = statCgroupId(path);
    if (id === null && !pathExists(path)) error = `kubelet cgroup "${path}" does not exist`;
  }
  return {
    configured,
    path,
    error,
    id,
    kubelets,
    otherKubelets: distrusted,
    otherKubeletsNotListed: scan.lookalikesNotListed,
  };
}

/** The filesystem type at a path, looking at its nearest existing parent. */
function fsTypeAt(path: string, mounts: Mount[]): string | null {
  let p = path;
  for (;;) {
    try {
      return mountOf(mounts, Deno.realPathSync(p))?.fsType ?? null;
    } catch {
      if (p === "/") return null;
      p = p.slice(0, p.lastIndexOf("/")) || "/";
    }
  }
}

/** Finds a cgroup directory by id under the cgroup2 mounts (bounded walk). */
function findCgroupById(roots: string[], id: bigint, limit = 20_000): string | null {
  let visited = 0;
  const stack = [...roots];
  while (stack.length > 0 && visited < limit) {
    const dir = stack.pop()!;
    visited++;
    try {
      if (statCgroupId(dir) === id) return dir;
      for (const e of Deno.readDirSync(dir)) if (e.isDirectory) stack.push(join(dir, e.name));
    } catch {
      // Removed while walking.
    }
  }
  return null;
}

/** The permission bits of a directory, or null when it cannot be read. */
function modeOf(path: string): number | null {
  try {
    const mode = Deno.statSync(path).mode;
    return mode === null ? null : mode & 0o7777;
  } catch {
    return null;
  }
}

/** What is wrong with the pin path's and its layout directories' owner and mode. */
function pinDirProblems(
  pinPath: string,
  layouts: { dir: string; unversioned: boolean }[],
): NodeSnapshot["pinDirProblems"] {
  const dirs: [string, string][] = [
    [pinPath, "Pin path"],
    ...layouts.filter((l) => !l.unversioned).map((l): [string, string] => [
      l.dir,
      "Layout directory",
    ]),
  ];
  return dirs.flatMap(([dir, what]) => {
    try {
      return rootDirProblem(dir, what) ?? [];
    } catch (e) {
      return [{ problem: `cannot check ${what} "${dir}": ${errorText(e)}`, tightenable: false }];
    }
  });
}

/** Other users' processes that have the pin path, or a directory right under it, open. */
function pinDirOpeners(pinPath: string): NodeSnapshot["pinDirOpeners"] {
  const dirs = [pinPath];
  try {
    for (const e of Deno.readDirSync(pinPath)) if (e.isDirectory) dirs.push(join(pinPath, e.name));
  } catch {
    return []; // no pin path: nothing to hold
  }
  return dirs.flatMap((dir) =>
    DirLock.openers(dir).flatMap((o) =>
      o.uid !== null && o.uid !== 0 ? [{ dir, pid: o.pid, uid: o.uid, comm: o.comm }] : []
    )
  );
}
