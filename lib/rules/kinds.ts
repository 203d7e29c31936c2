/**
 * What a target serves: a container's probe or lifecycle hook, by kind, and
 * the handler the kubelet runs for it. Pure.
 */

/** A container probe the kubelet runs. */
export type ProbeKind = "liveness" | "readiness" | "startup";
/** A lifecycle hook whose httpGet handler the kubelet sends to the pod. */
export type HookKind = "postStart" | "preStop";
/** What a target serves: one of the container's probes or one of its lifecycle hooks. */
export type TargetKind = ProbeKind | HookKind;
export type ProbeHandler = "httpGet" | "tcpSocket" | "grpc";

/** Every kind, in the order of the fields of a core/v1 Container. */
export const TARGET_KINDS: readonly TargetKind[] = [
  "liveness",
  "readiness",
  "startup",
  "postStart",
  "preStop",
];

/** Whether a target's `probe` names a lifecycle hook (anything else is a probe or unknown). */
export function isHookKind(kind: unknown): kind is HookKind {
  return kind === "postStart" || kind === "preStop";
}

/** "readiness probe", "preStop hook": how messages name what a target serves. */
export function kindLabel(kind: TargetKind): string {
  return `${kind} ${isHookKind(kind) ? "hook" : "probe"}`;
}
