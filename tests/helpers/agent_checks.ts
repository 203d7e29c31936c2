/**
 * What the agent's end-to-end tests share: an agent started as a process on the simulated node
 * from the pods directory, the check that the kubelet's probes land in the right network, and
 * the `lace doctor` and `lace targets` commands run as a user runs them.
 */
import assert from "node:assert/strict";
import {
  type AgentProcess,
  type AgentWorld,
  POD_IPV4,
  POD_IPV6,
  podManifest,
} from "./agent_process.ts";

/** A second pod, in network 2, at the same addresses as POD_A on other ports. */
export const POD_B = podManifest({ name: "b", networkId: 2, httpPort: 8081, tcpPort: 9001 });

/** Every probe of a pod manifest's container, on both addresses: [host, port, http path?]. */
export const probesOf = (
  httpPort: number,
  tcpPort: number,
): [string, number, string | undefined][] =>
  [POD_IPV4, POD_IPV6].flatMap((ip) =>
    [[ip, httpPort, "/healthz"], [ip, tcpPort, undefined]] as [
      string,
      number,
      string | undefined,
    ][]
  );

/**
 * Asserts that every probe of a pod with these ports, sent from the kubelet cgroup, reaches the
 * pod of network `networkId`.
 */
export async function assertReaches(
  w: AgentWorld,
  networkId: number,
  httpPort: number,
  tcpPort: number,
) {
  for (const [host, port, http] of probesOf(httpPort, tcpPort)) {
    const res = await w.probe(host, port, http);
    assert.equal(
      res.result,
      "reached",
      `${host}:${port} from the kubelet cgroup: ${JSON.stringify(res)}`,
    );
    assert.equal(
      res.body?.trim(),
      w.podIn(networkId),
      `${host}:${port} lands in network ${networkId}`,
    );
    if (http) assert.equal(res.httpStatus, 200);
  }
}

/** Writes pods to w's pods directory, starts an agent on it (no API server), waits until ready. */
export async function startReadyAgent(
  w: AgentWorld,
  pods: Record<string, unknown>[],
  extra: string[] = [],
): Promise<AgentProcess> {
  for (const pod of pods) await w.writePod(pod);
  const agent = w.startAgent(["--no-kube-api", `--pods-dir=${w.podsDir}`, ...extra]);
  await agent.ready();
  return agent;
}

/** `lace doctor --json` against w's pins, kubelet cgroup and agent. */
export async function laceDoctor(w: AgentWorld, agent: AgentProcess, sub: string[] = []) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      new URL("../../main.ts", import.meta.url).pathname,
      "doctor",
      ...sub,
      "--json",
      `--pin-path=${w.pinPath}`,
      `--kubelet-cgroup=${w.cgroups.kubelet}`,
      `--agent-socket=${agent.agentSocket}`,
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** `lace targets ARGS` run as a user does; asserts it succeeds and returns its JSON. */
export async function laceTargets(args: string[]) {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", new URL("../../main.ts", import.meta.url).pathname, "targets", ...args],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(out.code, 0);
  return JSON.parse(new TextDecoder().decode(out.stdout)) as {
    family: string;
    address: string;
    port: number;
    networkId: number;
    mark: number;
    pod?: string;
    hits?: number;
    lastHitAgeSeconds?: number | null;
  }[];
}
