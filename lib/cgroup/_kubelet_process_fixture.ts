/** Test fixture for the cgroup unit tests (never imported by the product). */
import type { KubeletProcess } from "./kubelet_process.ts";

/** A kubelet-looking process; by default a kubelet binary run by root in the host's mounts. */
export function kubeletProcess(
  pid: number,
  cgroup: string | null,
  extra: Partial<KubeletProcess> = {},
): KubeletProcess {
  return {
    pid,
    comm: "kubelet",
    kind: "kubelet",
    argv: ["kubelet"],
    cgroup,
    uid: 0,
    hostMountNamespace: true,
    ...extra,
  };
}
