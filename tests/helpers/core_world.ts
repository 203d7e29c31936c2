/**
 * The agent core's unit tests' world: fake pod sources, a memory probe store, fake time, the
 * core's reports collected, and pods of network N at an address with one readiness probe.
 */
import { AgentCore, type AgentCoreConfig, type AgentCoreOptions } from "../../lib/agent/core.ts";
import { markFor } from "../../lib/probe/key.ts";
import type { AddressClash, Claim, Conflict } from "../../lib/rules/conflicts.ts";
import { assertUsable, type Pod } from "../../lib/pods/pod.ts";
import type { PodCache } from "../../lib/pods/cache.ts";
import type { PodLookup, PodSink, PodSource } from "../../lib/pods/source.ts";
import { keyId, type ProbeEntry } from "../../lib/probe/key.ts";
import { MemoryProbeStore } from "./memory_probe_store.ts";
import { fakeTime } from "./fake_time.ts";
import type { Skip } from "../../lib/rules/skip.ts";
import type { Unwritten } from "../../lib/rules/share.ts";
import type { PodAt, SharedAddress } from "../../lib/rules/address_holders.ts";

export const CONFIG: AgentCoreConfig = {
  nodeName: "n1",
  networkAnnotation: "lace.io/network",
  networkIdAnnotation: "lace.io/network-id",
  probeMark: 0x1000,
  markShift: 16,
  debounceMs: 5,
  resyncMs: 60_000,
  addressConflict: "fail-closed",
  addressSharing: "exclusive",
  maxTargetsPerPod: 64,
  podCidrs: [],
};

/** The CNI path's word for pod "a": the node attached it to network 1 at 10.0.0.8. */
export const ATTACHED_TO_NET1 = {
  namespace: "ns",
  name: "p-a",
  uid: "a",
  ips: ["10.0.0.8"],
  network: "net1",
  networkId: 1,
};

export class FakeSource implements PodSource {
  sink: PodSink | undefined;
  stopped = false;
  constructor(readonly name: string) {}
  start(sink: PodSink): Promise<void> {
    this.sink = sink;
    return Promise.resolve();
  }
  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }
  list(...pods: Pod[]): void {
    this.sink!.replaceAll(this.name, pods);
  }
}

/**
 * A running pod `p-<uid>` of namespace ns on node n1 at `ip` (none: no address yet) in network
 * `net<N>` (none: the default network), with one httpGet readiness probe on `port`.
 */
export function pod(
  uid: string,
  ip: string | undefined,
  networkId: number | undefined,
  created = "2026-01-01T00:00:00Z",
  port: number | string = 8080,
): Pod {
  return {
    metadata: {
      name: `p-${uid}`,
      namespace: "ns",
      uid,
      creationTimestamp: created,
      annotations: networkId
        ? { "lace.io/network": `net${networkId}`, "lace.io/network-id": String(networkId) }
        : undefined,
    },
    spec: {
      nodeName: "n1",
      containers: [{ name: "app", readinessProbe: { httpGet: { port, path: "/ready" } } }],
    },
    status: { phase: "Running", ...(ip ? { podIPs: [{ ip }] } : {}) },
  };
}

export function entry(address: string, port: number, networkId: number): ProbeEntry {
  return {
    key: { family: "ipv4", address, port },
    value: { networkId, mark: markFor(CONFIG, networkId) },
  };
}

export function ids(store: MemoryProbeStore): string[] {
  return store.entries().map((e) => `${keyId(e.key)}=${e.value.networkId}`).sort();
}

export function setup(
  sourceNames = ["api"],
  config: Partial<AgentCoreConfig> = {},
  store = new MemoryProbeStore(),
  podLookup?: PodLookup,
  extra: Partial<AgentCoreOptions> = {},
) {
  const { clock, timers } = fakeTime();
  const sources = sourceNames.map((n) => new FakeSource(n));
  const skips: Skip[] = [];
  const conflicts: [Conflict, Claim][] = [];
  const refusals: AddressClash[][] = [];
  const unwritten: Unwritten[] = [];
  const clashes: [SharedAddress, PodAt][] = [];
  const core = new AgentCore({
    config: { ...CONFIG, ...config },
    store,
    sources,
    onSkip: (s) => skips.push(s),
    onConflict: (c, dropped) => conflicts.push([c, dropped]),
    onAttachRefused: (_a, clashes) => refusals.push(clashes),
    onUnwritten: (u) => unwritten.push(u),
    onAddressClash: (a, p) => clashes.push([a, p]),
    timers,
    ...(podLookup ? { podLookup } : {}),
    ...extra,
  });
  const settle = async (ms = CONFIG.debounceMs) => {
    await clock.tickAsync(ms);
    await core.runner.idle();
  };
  return {
    clock,
    timers,
    store,
    sources,
    core,
    skips,
    conflicts,
    refusals,
    unwritten,
    clashes,
    settle,
  };
}

/**
 * The pod cache's lookups over `byUid`, for the rules' unit tests: get() throws for a uid mapped
 * to an Error (a pod the cache cannot evaluate) and for a pod refused as unusable, as the cache
 * does; holderView() gives no pod for the Error.
 */
export function podLookups(
  byUid: ReadonlyMap<string, Pod | Error>,
): Pick<PodCache, "uids" | "get" | "holderView"> {
  return {
    uids: () => [...byUid.keys()],
    get(uid) {
      const p = byUid.get(uid);
      if (p instanceof Error) throw p;
      if (p) assertUsable(p);
      return p;
    },
    holderView(uid) {
      const p = byUid.get(uid);
      return p instanceof Error ? undefined : p;
    },
  };
}
