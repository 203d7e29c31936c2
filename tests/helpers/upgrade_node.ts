/**
 * The upgrade tests' node: the target the stand-in kubelet connects to, what the map holds for
 * it, and how to start, converge, read and stop agents of different releases on one node's pins.
 */
import assert from "node:assert/strict";
import { defaultConfig } from "../../lib/config.ts";
import { markFor } from "../../lib/probe/key.ts";
import { isPresenceDir } from "../../lib/datapath/layout.ts";
import {
  openCurrentMap,
  readCounterSlot,
  readPinnedInfo,
  readPinnedTargets,
  readPinnedTargetsWithHits,
} from "../../lib/datapath/pins.ts";
import { COUNTER_SLOTS } from "../../lib/datapath/probe_map.ts";
import { keyId, type ProbeEntry } from "../../lib/probe/key.ts";
import { type AgentProcess, type AgentWorld, POD_A, POD_IPV4, POD_IPV6 } from "./agent_process.ts";
import { sha256Of } from "./releases.ts";
import type { KubeletTally, StandInKubelet } from "./stand_in_kubelet.ts";
import { waitFor } from "./wait.ts";

export const MARK = markFor(defaultConfig(), 1);
export const TARGET = { host: POD_IPV4, port: 9000, mark: MARK };
/** What the stand-in kubelet connects to: TARGET, and the same pod and port over IPv6. */
export const TARGETS = [TARGET, { ...TARGET, host: POD_IPV6 }];
/** What the map holds for POD_A, whatever the release. */
export const EXPECTED: ProbeEntry[] = [POD_IPV4, POD_IPV6].flatMap((address) =>
  [8080, 9000].map((port) => ({
    key: { family: address === POD_IPV4 ? "ipv4" as const : "ipv6" as const, address, port },
    value: { networkId: 1, mark: MARK },
  }))
);

/** Starts an agent running `object` (default: today's) on w's pods. */
export function startAgent(w: AgentWorld, object?: string, env: Record<string, string> = {}) {
  return w.startAgent(
    ["--no-kube-api", `--pods-dir=${w.podsDir}`],
    w.cgroups.kubelet,
    { env: object ? { LACE_BPF_OBJECT: object, ...env } : env },
  );
}

/** Starts an agent and waits until it is ready (attached, its program in the links). */
export async function startReadyAgent(w: AgentWorld, object?: string): Promise<AgentProcess> {
  const agent = startAgent(w, object);
  await agent.ready();
  return agent;
}

/** Connects counted in the last counter slot, which only the test variant counts. */
export function variantCount(pinPath: string): bigint {
  using counters = openCurrentMap(pinPath, "counters");
  return readCounterSlot(counters, COUNTER_SLOTS - 1);
}

/** The names under the pin path, and under each layout directory; not running agents' presence. */
export function pins(pinPath: string): string[] {
  const out: string[] = [];
  for (const e of Deno.readDirSync(pinPath)) {
    if (isPresenceDir(e.name)) continue;
    out.push(e.name);
    if (e.isDirectory) {
      for (const m of Deno.readDirSync(`${pinPath}/${e.name}`)) out.push(`${e.name}/${m.name}`);
    }
  }
  return out.sort();
}

/** Exactly one layout's maps and the two links. */
export function onlyLayout(abi: number): string[] {
  return [
    `abi${abi}`,
    `abi${abi}/counters`,
    `abi${abi}/info`,
    `abi${abi}/probe_targets`,
    "link_connect4",
    "link_connect6",
  ];
}

export function sorted(entries: ProbeEntry[]): string[] {
  return entries.map((e) => `${keyId(e.key)} ${e.value.networkId} ${e.value.mark}`).sort();
}

/** Waits until the node runs `object` on layout `abi` alone, with POD_A's targets. */
export async function converged(w: AgentWorld, object: string, abi: number): Promise<void> {
  const sha = await sha256Of(object);
  await waitFor(() => readPinnedInfo(w.pinPath)?.objectSha256 === sha, {
    message: `the links to run ${object}`,
  });
  assert.equal(readPinnedInfo(w.pinPath)?.abiVersion, abi);
  await waitFor(() => pins(w.pinPath).join() === onlyLayout(abi).join(), {
    message: `only layout ${abi} pinned (have ${pins(w.pinPath).join(", ")})`,
  });
  assert.deepEqual(sorted(readPinnedTargets(w.pinPath)), sorted(EXPECTED));
}

export function assertNoneUntagged(tally: KubeletTally) {
  assert.equal(tally.untagged, 0, `untagged connects: ${tally.samples.join(", ")}`);
  for (const { host } of TARGETS) {
    const n = tally.perHost[host] ?? 0;
    assert.ok(n > 25, `only ${n} connects to ${host}`);
  }
}

/** The end of every upgrade: 20 more connects, then none of the kubelet's went untagged. */
export async function assertLastConnectsTagged(kubelet: StandInKubelet): Promise<void> {
  await kubelet.connects(20);
  assertNoneUntagged(await kubelet.stop());
}

/** Stops `agent` as a rolling update does and asserts that it exited cleanly. */
export async function stopCleanly(agent: AgentProcess): Promise<void> {
  assert.equal((await agent.stop()).code, 0);
}

/** The node before the change under test: POD_A written, an agent running `object` on it. */
export async function nodeRunning(w: AgentWorld, object?: string): Promise<AgentProcess> {
  await w.writePod(POD_A);
  return await startReadyAgent(w, object);
}

export const TODAY = new URL("../../bpf/lace.bpf.o", import.meta.url).pathname;

/** The hits the map holds for TARGET now (0n when its layout has none). */
export function targetHits(pinPath: string): bigint {
  const e = readPinnedTargetsWithHits(pinPath).find((e) =>
    e.key.address === TARGET.host && e.key.port === TARGET.port
  );
  return e?.hits.hits ?? 0n;
}
