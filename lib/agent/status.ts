/**
 * What the running agent reports about itself, read from its parts: readiness (the follower's,
 * the first full pod list, the listeners'), every target with the map's hits (`/targets`,
 * `lace targets`, doctor) and the addresses pods of several networks hold (`/addresses`).
 * start.ts builds and orders the parts; this file only reads them.
 */
import type { CgroupFollower } from "../cgroup/follower.ts";
import { type HitsView, hitsView, NO_HITS } from "../datapath/hits.ts";
import { monotonicNowNs } from "../libbpf/mod.ts";
import type { Datapath } from "../datapath/loader.ts";
import type { ProbeKey } from "../probe/key.ts";
import { runInSlices, TimeSlice } from "../time/timers.ts";
import type { AgentCore } from "./core.ts";
import type { AgentSnapshot } from "./snapshot.ts";
import type {
  AddressesView,
  ChainingView,
  HostAddressSource,
  TargetView,
} from "../agent_api/views.ts";
import { type Readiness, sharedFor, type StatusProvider } from "./http/surfaces.ts";
import { SLICE_MS } from "./http/json_array_stream.ts";
import type { KubeletNetnsAddresses } from "./host/kubelet_netns_addresses.ts";
import type { Listening } from "./http/listeners.ts";
import type { ApiServerAddresses } from "./host/api_server_addresses.ts";
import type { Metrics } from "./metrics.ts";
import type { UnmatchedWatch } from "./unmatched_watch.ts";

/** The parts the status reads; `listeners` and `unmatched` may be filled in after it is made. */
export interface StatusParts {
  core: Pick<AgentCore, "view">;
  datapath: Pick<Datapath, "store">;
  follower: Pick<CgroupFollower, "readiness">;
  /** The started listeners (an array start.ts fills once they are up). */
  listeners: readonly Listening[];
  unmatched: () => UnmatchedWatch | undefined;
  /** The CNI chaining's last pass (chaining.ts); undefined while it has not started. */
  chaining?: () => ChainingView | undefined;
  hostAddresses: Pick<KubeletNetnsAddresses, "status">;
  /** The API server's addresses the host holds (host/api_server_addresses.ts). */
  apiServer?: Pick<ApiServerAddresses, "view">;
  /** The operator's pod ranges (--pod-cidrs), as given. */
  podRanges: string[];
  metrics: Pick<Metrics, "text" | "contentType">;
}

/** Builds the agent's status over `parts`; each call reads them as they are then. */
export function agentStatus(parts: StatusParts): StatusProvider {
  const { core, datapath, follower, listeners } = parts;
  // Listeners whose accepts keep failing (EMFILE…) take no connections: not ready.
  const readiness = (): Readiness => {
    const reasons = [...follower.readiness().reasons];
    const snap = core.view();
    if (!snap.firstFullListApplied) {
      reasons.push(
        snap.synced
          ? "first full pod list not applied to the probe map yet"
          : "waiting for the first full pod list from every source",
      );
    }
    for (const l of listeners) {
      const failure = l.failure();
      if (failure) reasons.push(failure);
    }
    return { ready: reasons.length === 0, reasons };
  };
  // /targets: the map's hits read in batches into an index over the read's buffers, a time slice
  // at a time, then each target's view made as it is written (a slice at a time too, by
  // jsonArrayResponse): the event loop runs in between and nothing but the buffers is held. One
  // lookup per target would cost a system call each, most of a full map's answer. The read is the
  // map's every entry, as the answer is; requests that come while one is being read share it
  // rather than each reading the map again.
  const readHits = sharedFor(
    0,
    () => runInSlices(datapath.store.hitsInSteps(), new TimeSlice(SLICE_MS)),
  );
  return {
    readiness,
    async targets(): Promise<Iterable<TargetView>> {
      const hits = await readHits();
      const nowNs = monotonicNowNs();
      return httpTargetViews(core.view(), (key) => hitsView(hits.get(key) ?? NO_HITS, nowNs));
    },
    unmatched: () => parts.unmatched()?.recent() ?? [],
    addresses: () => ({
      ...addressesView(core.view(), parts.hostAddresses.status(), parts.podRanges),
      ...(parts.apiServer ? { apiServer: parts.apiServer.view() } : {}),
    }),
    chaining: () => parts.chaining?.(),
    metricsText: () => parts.metrics.text(),
    metricsContentType: parts.metrics.contentType,
  };
}

/**
 * Turns the core's snapshot into the HTTP view (`/targets`, `lace targets`,
 * doctor), with each target's hits as the map holds them now.
 */
function* httpTargetViews(
  snapshot: Readonly<AgentSnapshot>,
  hitsOfKey: (key: ProbeKey) => HitsView,
): Generator<TargetView> {
  for (const t of snapshot.targets) {
    yield ({
      family: t.entry.key.family,
      address: t.entry.key.address,
      port: t.entry.key.port,
      networkId: t.entry.value.networkId,
      mark: t.entry.value.mark,
      pod: `${t.pod.namespace}/${t.pod.name}`,
      network: t.network,
      container: t.container,
      probe: t.probe,
      handler: t.handler,
      ...(t.http ? { httpPath: t.http.path, httpScheme: t.http.scheme } : {}),
      ...(t.periodSeconds ? { periodSeconds: t.periodSeconds } : {}),
      ...hitsOfKey(t.entry.key),
    });
  }
}

/** The snapshot's shared addresses for `/addresses` (local socket only). */
function addressesView(
  snapshot: Readonly<AgentSnapshot>,
  hostAddressSource: HostAddressSource,
  podRanges: string[],
): AddressesView {
  const name = (p: { namespace: string; name: string }) => `${p.namespace}/${p.name}`;
  return {
    sharing: snapshot.addressSharing,
    addresses: snapshot.sharedAddresses.map((s) => ({
      family: s.family,
      address: s.address,
      holder: name(s.holder.pod),
      holderNetwork: s.holder.network.network,
      later: s.later.map((p) => ({ pod: name(p.pod), network: p.network.network })),
      holderWithdrawn: s.holderWithdrawn,
    })),
    hostHeld: snapshot.hostHeld.map((h) => ({ pod: name(h.pod), address: h.address })),
    podRanges,
    outsidePodRanges: snapshot.outsidePodRanges.map((h) => ({
      pod: name(h.pod),
      address: h.address,
    })),
    hostAddressSource,
  };
}
