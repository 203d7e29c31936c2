/**
 * Which kubelet-looking process `--kubelet-cgroup auto` may follow. A name is no identity: any
 * container process can be called `kubelet`, and following it would move the probe programs
 * into a tenant's cgroup (every real probe untagged, the tenant's connections tagged). So a
 * candidate is trusted only when it runs as root, in the host's mount namespace, and outside
 * every container or pod cgroup; among the trusted ones the kubelet's own systemd unit comes
 * first. Pure: the facts about each process come in as data (see kubelet_finder.ts).
 */
import type { KubeletKind, KubeletProcess } from "./kubelet_process.ts";

/** A kubelet-looking process that is not followed, and why. */
export interface DistrustedKubelet {
  pid: number;
  comm: string;
  /** Its cgroup as /proc/PID/cgroup shows it, or null. */
  cgroup: string | null;
  reason: string;
}

/** Units that run the kubelet (or a binary that embeds it) on the common distributions. */
export const KUBELET_UNITS: readonly string[] = [
  "kubelet.service",
  "k3s.service",
  "k3s-agent.service",
  "rke2-server.service",
  "rke2-agent.service",
  "snap.microk8s.daemon-kubelite.service",
  "k0sworker.service",
  "k0scontroller.service",
];

/** systemd scopes that container runtimes create for each container (systemd cgroup driver). */
const RUNTIME_SCOPE =
  /^(cri-containerd|crio|crio-conmon|cri-dockerd|docker|libpod|libpod-conmon|nerdctl|containerd)-.+\.scope$/;

/**
 * Why a cgroup path is a container's or a pod's, or null when it is neither. Pods live under
 * `kubepods…` (both cgroup drivers); runtimes name each container's scope after themselves
 * (`cri-containerd-<id>.scope`), or with the cgroupfs driver a directory named by the 64-hex
 * container id; Docker, Podman, LXC and systemd-nspawn have their own parents.
 */
export function containerCgroupReason(cgroup: string): string | null {
  for (const part of cgroup.split("/")) {
    if (part.startsWith("kubepods")) return `pod cgroup "${cgroup}"`;
    if (RUNTIME_SCOPE.test(part) || /^[0-9a-f]{64}$/.test(part)) {
      return `container cgroup "${cgroup}"`;
    }
    if (
      part === "docker" || part === "libpod_parent" || part.startsWith("lxc.payload.") ||
      part === "machine.slice"
    ) {
      return `container cgroup "${cgroup}"`;
    }
  }
  return null;
}

/** Why a candidate must not be followed, or null when it may be. */
export function distrustReason(k: KubeletProcess): string | null {
  if (k.cgroup === null) return "its cgroup cannot be read";
  const container = containerCgroupReason(k.cgroup);
  if (container) return `it runs in a ${container}`;
  if (k.hostMountNamespace === false) return "it runs in a mount namespace other than the host's";
  if (k.hostMountNamespace === null) {
    return "its mount namespace cannot be compared with the host's (PID 1's)";
  }
  if (k.uid !== 0) {
    return k.uid === null ? "its user cannot be read" : `it runs as uid ${k.uid}, not as root`;
  }
  return null;
}

/** 0 for a kubelet's known systemd unit, 1 for another service, 2 for anything else. */
function unitRank(cgroup: string | null): number {
  const parts = (cgroup ?? "").split("/");
  if (parts.some((p) => KUBELET_UNITS.includes(p))) return 0;
  return parts.some((p) => p.endsWith(".service")) ? 1 : 2;
}

const KIND_ORDER: Record<KubeletKind, number> = { kubelet: 0, k3s: 1, kubelite: 1 };

/**
 * Splits candidates into those `auto` may follow, best first (a kubelet's known unit, then any
 * service, then other cgroups; a kubelet binary before k3s/kubelite; then by pid), and those it
 * must not, each with its reason.
 */
export function judgeKubelets(
  found: readonly KubeletProcess[],
): { trusted: KubeletProcess[]; distrusted: DistrustedKubelet[] } {
  const trusted: KubeletProcess[] = [];
  const distrusted: DistrustedKubelet[] = [];
  for (const k of found) {
    const reason = distrustReason(k);
    if (reason === null) trusted.push(k);
    else distrusted.push({ pid: k.pid, comm: k.comm, cgroup: k.cgroup, reason });
  }
  trusted.sort((a, b) =>
    unitRank(a.cgroup) - unitRank(b.cgroup) || KIND_ORDER[a.kind] - KIND_ORDER[b.kind] ||
    a.pid - b.pid
  );
  distrusted.sort((a, b) => a.pid - b.pid);
  return { trusted, distrusted };
}
