/**
 * A probe or a pod that gets no target, with the reason an operator sees in
 * logs, Events and `lace targets`: the rules never throw, they skip. Pure.
 */
import type { PodIdentity } from "./pod_fields.ts";
import type { TargetKind } from "./kinds.ts";

export type SkipReason =
  | "host"
  | "named-port"
  | "port-range"
  | "annotation"
  | "address"
  | "special-address"
  | "host-address"
  | "outside-pod-ranges"
  | "malformed"
  | "too-large";

/** A probe (or a whole pod) that gets no target, with what an operator should know. */
export interface Skip {
  pod: PodIdentity;
  container?: string;
  probe?: TargetKind;
  reason: SkipReason;
  message: string;
}
