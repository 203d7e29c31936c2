/**
 * What every real node's start keeps from its first step (tests/node/node.ts, second_node.ts):
 * a name claimed through lib/demo/leftovers.ts (so the next run sweeps the namespace and cgroups
 * of a run killed outright), the run's directory, removed last, the cleanup stack, its
 * processes' log files and the measured phases.
 */
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { claimSuffix } from "../../lib/demo/leftovers.ts";
import { tail } from "../kube/_process.ts";

export interface NodeStart {
  /** The node's name: its network namespace's, its cgroups' and its name in the API. */
  name: string;
  /** The run's directory. */
  dir: string;
  cleanup: CleanupStack;
  /** The node's log files, for a failure message; each process's is added. */
  logFiles: string[];
  /** Measured start-up phases in ms. */
  timings: Record<string, number>;
  /** Records the time since the previous mark as the phase `what`. */
  mark(what: string): void;
  /** The tails of the node's log files. */
  logs(maxLines?: number): Promise<string>;
}

/** Claims a node name and makes its run directory, whose removal is the last cleanup step. */
export async function beginNodeStart(): Promise<NodeStart> {
  const name = `lace-knode-${claimSuffix()}`;
  const dir = await Deno.makeTempDir({ prefix: `${name}-` });
  const cleanup = new CleanupStack(`node ${name}`);
  cleanup.push(() => Deno.remove(dir, { recursive: true }).catch(() => {}));
  const timings: Record<string, number> = {};
  const logFiles: string[] = [];
  let phase = performance.now();
  const mark = (what: string) => {
    const now = performance.now();
    timings[what] = Math.round(now - phase);
    phase = now;
  };
  const logs = async (maxLines = 40) => {
    const parts: string[] = [];
    for (const file of logFiles) parts.push(`--- ${file} ---\n${await tail(file, maxLines)}`);
    return parts.join("\n");
  };
  return { name, dir, cleanup, logFiles, timings, mark, logs };
}
