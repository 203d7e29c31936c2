/**
 * Where the trusted kubelets run relative to the cgroup Lace's programs are on: which one
 * is outside it (a mismatch the operator must fix) and which kubelet-looking processes are
 * reported but never followed. Pure but for the cgroup-id lookup it is given.
 */
import { isWithin, mapProcessCgroup, type MountPoint } from "./path.ts";
import type { KubeletProcess } from "./kubelet_process.ts";
import type { DistrustedKubelet } from "./kubelet_trust.ts";
import type { KubeletMismatch } from "./follower_status.ts";

/** A trusted kubelet and its cgroup directory on this machine's cgroup2 mount. */
export interface PlacedKubelet {
  k: KubeletProcess;
  dir: string;
}

/** The trusted kubelets with their cgroup directories on this machine's cgroup2 mount. */
export function placeKubelets(
  trusted: KubeletProcess[],
  mounts: MountPoint[],
  hostCgroupRoot: string,
): PlacedKubelet[] {
  return trusted.map((k) => {
    try {
      return { k, dir: mapProcessCgroup(k.cgroup!, mounts, hostCgroupRoot) };
    } catch {
      return { k, dir: k.cgroup ?? "" };
    }
  });
}

/**
 * A trusted kubelet outside the cgroup the programs are on, when none runs inside it (in
 * auto too: the kubelet moved after the follower settled). Distrusted processes never count:
 * telling the operator to follow one would hand the hook to whoever named it.
 */
export function kubeletMismatch(
  path: string | null,
  placed: PlacedKubelet[],
  cgroupId: (dir: string) => bigint | null,
): KubeletMismatch | null {
  if (path === null || placed.length === 0) return null;
  const pathId = cgroupId(path);
  // Programs on a cgroup apply to all cgroups below it.
  const inside = ({ dir }: { dir: string }) =>
    dir !== "" && (isWithin(dir, path) || (pathId !== null && cgroupId(dir) === pathId));
  if (placed.some(inside)) return null;
  const { k, dir } = placed[0];
  return { kubeletPid: k.pid, kubeletComm: k.comm, kubeletCgroup: dir || "unknown" };
}

/**
 * Kubelet-looking processes that are not followed: every distrusted one, and trusted ones
 * outside the cgroup the programs are on (a second kubelet), except the one already
 * reported as the mismatch.
 */
export function otherKubelets(
  path: string | null,
  placed: PlacedKubelet[],
  mismatch: KubeletMismatch | null,
  distrusted: DistrustedKubelet[],
): DistrustedKubelet[] {
  const second = placed
    .filter(({ k, dir }) => path !== null && !isWithin(dir, path) && k.pid !== mismatch?.kubeletPid)
    .map(({ k }) => ({
      pid: k.pid,
      comm: k.comm,
      cgroup: k.cgroup,
      reason: `a second kubelet outside the kubelet cgroup "${path}"`,
    }));
  return [...distrusted, ...second].sort((a, b) => a.pid - b.pid);
}
