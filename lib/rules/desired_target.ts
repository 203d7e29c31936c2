/**
 * One desired map entry with the pod and probe it serves: what the desired
 * state computes for each target, what the per-pod memo keeps and what the
 * agent shows (desired_state.ts, address_placement.ts).
 */
import type { ProbeEntry } from "../probe/key.ts";
import type { Target } from "./targets.ts";

/** One desired map entry and the pod and probe it serves. */
export interface DesiredTarget extends Omit<Target, "key" | "networkId"> {
  entry: ProbeEntry;
}
