/**
 * A kubelet-looking process as the finder sees it and the trust rules judge it
 * (kubelet_finder.ts finds them, kubelet_trust.ts decides which may be trusted).
 */

/** The binaries a kubelet runs in: its own, or k3s and MicroK8s' kubelite around it. */
export type KubeletKind = "kubelet" | "k3s" | "kubelite";

/** A process that runs the kubelet. */
export interface KubeletProcess {
  pid: number;
  comm: string;
  kind: KubeletKind;
  argv: string[];
  /** Its cgroup v2 path as /proc/PID/cgroup shows it (`0::` line), or null. */
  cgroup: string | null;
  /** Its real uid when it equals the effective one, else the one that is not 0; null if unknown. */
  uid: number | null;
  /** Whether it shares the mount namespace of PID 1 (the host's); null when that is unknown. */
  hostMountNamespace: boolean | null;
}
