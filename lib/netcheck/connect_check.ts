/**
 * One path's TCP or UDP connect (`/agnhost connect` in the source pod),
 * classified by connect_result.ts into one PathResult; run.ts schedules it
 * over the pairs and records it.
 */
import { joinHostPort } from "../net/host_port.ts";
import type { NetcheckCluster } from "./cluster.ts";
import { classifyConnect } from "./connect_result.ts";
import type { NetworkEndpoint } from "./isolation.ts";
import type { NetcheckOptions } from "./options.ts";
import type { Pair } from "./pairs.ts";
import type { PathResult } from "./summary.ts";

/**
 * Connects from the pair's source pod to the target's `port` (`args` adds
 * e.g. `--protocol=udp`); undefined when `signal` aborted the exec.
 */
export async function checkConnect(
  cluster: NetcheckCluster,
  options: NetcheckOptions,
  pair: Pair<NetworkEndpoint>,
  check: { phase: "connect" | "udp"; args: string[]; port: number; network: string | undefined },
  signal: AbortSignal | undefined,
): Promise<PathResult | undefined> {
  const started = Date.now();
  const result = await cluster.exec(
    pair.from.namespace ?? options.namespace,
    pair.from.pod,
    "connect",
    [
      "/agnhost",
      "connect",
      ...check.args,
      `--timeout=${options.connectTimeoutMs}ms`,
      joinHostPort(pair.to.address, check.port),
    ],
    { timeoutMs: options.connectTimeoutMs + 30_000, signal },
  );
  if (signal?.aborted) return undefined;
  const outcome = classifyConnect(result);
  return {
    phase: check.phase,
    ...(check.network === undefined ? {} : { network: check.network }),
    from: pair.from.node,
    to: pair.to.node,
    fromPod: pair.from.pod,
    toPod: pair.to.pod,
    ok: outcome.ok,
    ...(outcome.ok ? {} : { errorClass: outcome.errorClass, message: outcome.message }),
    attempts: 1,
    durationMs: Date.now() - started,
  };
}
