/**
 * `lace doctor`'s checks: a pure evaluation of a snapshot of the node
 * (gathered by snapshot.ts) into checks that each say what is wrong
 * and how to fix it. Tested without root by building snapshots by hand.
 */
import type { Check, NodeSnapshot } from "./check.ts";
import { datapathChecks } from "./datapath_checks.ts";
import { kubeletChecks } from "./kubelet_checks.ts";
import { agentChecks } from "./agent_checks.ts";
import { cniChecks } from "./cni_checks.ts";

/** Evaluates a snapshot into the doctor's checks, in the order an operator reads them. */
export function evaluate(s: NodeSnapshot): Check[] {
  return [...datapathChecks(s), ...kubeletChecks(s), ...agentChecks(s), ...cniChecks(s)];
}
