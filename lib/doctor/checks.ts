/**
 * `lace doctor`'s checks: a pure evaluation of a snapshot of the node
 * (gathered by snapshot.ts) into checks that each say what is wrong
 * and how to fix it. Tested without root by building snapshots by hand.
 */
import { type Check, check, type NodeSnapshot } from "./check.ts";
import { datapathChecks } from "./datapath_checks.ts";
import { kubeletChecks } from "./kubelet_checks.ts";
import { agentChecks } from "./agent_checks.ts";
import { cniChecks } from "./cni_checks.ts";

/** Evaluates a snapshot into the doctor's checks, in the order an operator reads them. */
export function evaluate(s: NodeSnapshot): Check[] {
  return [
    ...datapathChecks(s),
    ...kubeletChecks(s),
    ...agentChecks(s),
    ...cniChecks(s),
    ...podsDirChecks(s),
  ];
}

/**
 * Whether only root may write the pods directory (or it is on a read-only mount): the agent
 * refuses to start on one others may write, whose pods anyone could plant.
 */
function podsDirChecks(s: NodeSnapshot): Check[] {
  if (!s.podsDir) return [];
  const { dir, problem } = s.podsDir;
  return [check(
    "pods-dir",
    problem === undefined,
    problem ?? `only root may write the pods directory "${dir}"`,
    "the agent refuses to start on it until fixed as said",
  )];
}
