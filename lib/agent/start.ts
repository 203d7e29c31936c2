/**
 * The running node agent: the datapath, the pod sources, the agent core, the
 * kubelet cgroup follower, the Event recorder and metrics, wired together with
 * the listeners (http/listeners.ts: the HTTP servers, the CNI socket, the
 * chaining), what they report (status.ts) and the Events the core's problems
 * become (problem_events.ts). Each part is built and tested on its own; this
 * file only composes them and owns their start/stop order.
 */
import { getLogger } from "@logtape/logtape";
import { CleanupStack } from "../os/cleanup_stack.ts";
import type { Config } from "../config.ts";
import { AgentCore } from "./core.ts";
import { clusterParts } from "./cluster_parts.ts";
import { CgroupFollower } from "../cgroup/follower.ts";
import { Datapath } from "../datapath/loader.ts";
import { removeLacePins } from "../datapath/pins.ts";
import { type Listening, startListeners } from "./http/listeners.ts";
import type { RunningChaining } from "./chaining.ts";
import { agentStatus } from "./status.ts";
import { parseCidr } from "../net/cidr.ts";
import { UnmatchedWatch } from "./unmatched_watch.ts";
import { trimMallocHeap } from "./malloc_trim.ts";
import { Metrics } from "./metrics.ts";
import { fileNodeNetworkStore } from "./admission/node_networks.ts";
import { readHostAddresses } from "./host/addresses.ts";
import { KubeletNetnsAddresses } from "./host/kubelet_netns_addresses.ts";
import { ApiServerAddresses } from "./host/api_server_addresses.ts";
import { kubeletKubeconfigSource, resolveHost } from "./host/api_server_sources.ts";
import { nodeObjectRef } from "../kube/event_sink.ts";
import { problemEvents } from "./problem_events.ts";
import { installLogLimiter, LogLimiter } from "../log/limiter.ts";
import { realTimers } from "../time/timers.ts";
import { buildInfo } from "../version.ts";

const log = getLogger(["lace", "agent"]);

/** A started agent; what it serves is read over HTTP and the local socket. */
export interface RunningAgent {
  /**
   * Stops everything and leaves the pinned program, links and map in place,
   * unless Lace's DaemonSet is gone (the release uninstalled): then it removes
   * them as `lace uninstall` does, after the chaining restored the CNI files.
   * Rejects when a part failed to stop or the pins could not be removed.
   */
  stop(): Promise<void>;
}

/**
 * Starts the agent. Resolves once every part is running (not once ready:
 * readiness needs the kubelet cgroup and a first full pod list, which may
 * come much later). A start that fails half-way stops and closes, newest
 * first, every part it had started, and rethrows; the pins stay, as on stop.
 */
export async function startAgent(config: Config): Promise<RunningAgent> {
  const parts = new CleanupStack("Agent");
  try {
    return await startParts(config, parts);
  } catch (error) {
    for (const failure of await parts.runAll()) {
      log.warning("Undoing a failed start: {error}", { error: String(failure) });
    }
    throw error;
  }
}

/** Starts each part and pushes its stop onto `parts`, so a failure can undo what was done. */
async function startParts(config: Config, parts: CleanupStack): Promise<RunningAgent> {
  // Lines a tenant's pods drive are limited while the agent runs (log/limiter.ts); stopped last,
  // so the summaries of what the other parts logged while stopping are written.
  const limiter = new LogLimiter({ timers: realTimers, overflowLogger: log });
  const uninstallLimiter = installLogLimiter(limiter);
  parts.push(() => {
    uninstallLimiter();
    limiter.stop();
  });
  const datapath = Datapath.open({ pinPath: config.pinPath });
  parts.push(() => datapath.close());
  let unmatched: UnmatchedWatch | undefined;
  let chaining: RunningChaining | undefined;
  const metrics = new Metrics(
    orWarn("BPF counters", () => datapath.counters()),
    orWarn(
      "the probe map's size",
      () => ({ entries: datapath.store.count(), capacity: datapath.store.capacity }),
    ),
    datapath.abi,
    orWarn("the per-network connect counts", () => unmatched?.networkConnects()),
    buildInfo(),
  );

  const { sources, events, uninstalling, podLookup, apiServerSources, readRuntimeVersion } =
    await clusterParts(
      config,
      parts,
      {
        onWatchRestart: () => metrics.watchRestarts.inc(),
        onEventDrop: (reason, count) => metrics.eventsDropped.inc({ reason }, count),
      },
    );
  const nodeRef = nodeObjectRef(config.nodeName || Deno.hostname());
  // Asked once at the stop: the CNI chain and the pins go on the same answer, or neither.
  let answer: Promise<boolean> | undefined;
  const released = uninstalling && (() => answer ??= uninstalling());

  let desiredApplied = false;
  let trimTimer: number | undefined;
  parts.push(() => {
    if (trimTimer !== undefined) clearTimeout(trimTimer);
  });
  // The node's own addresses from the kubelet's namespace, through the follower's cgroup and the
  // kubelet's pid (kept from its status changes); before the follower knows the cgroup they fall
  // back to the agent's own.
  let kubelet: { path: string | null; pid: number | null; cgroup: string | null } = {
    path: null,
    pid: null,
    cgroup: null,
  };
  const hostAddresses = new KubeletNetnsAddresses({
    cgroupPath: () => kubelet.path,
    kubelet: () => kubelet.pid === null ? null : { pid: kubelet.pid, cgroup: kubelet.cgroup },
    ownAddresses: readHostAddresses,
    onChange: (s) => {
      metrics.hostAddressesFallback.set(s.source === "fallback" ? 1 : 0);
      metrics.agentOtherNetns.set(s.otherNetns ? 1 : 0);
    },
  });
  // The API server's addresses, held by the host with the node's own
  // (host/api_server_addresses.ts).
  const apiServer = new ApiServerAddresses({
    sources: [...apiServerSources, kubeletKubeconfigSource(() => kubelet.pid)],
    resolve: resolveHost,
    timers: realTimers,
    onRefresh: (failing) => metrics.apiServerSourcesFailing.set(failing),
  });
  const core: AgentCore = new AgentCore({
    config,
    // Beside the CNI socket, in its root-only directory: only the CNI path reports networks.
    ...(config.cniSocket
      ? {
        nodeNetworkStore: fileNodeNetworkStore(
          `${config.cniSocket.slice(0, config.cniSocket.lastIndexOf("/"))}/node-networks.json`,
        ),
      }
      : {}),
    store: datapath.store,
    sources,
    ...(podLookup ? { podLookup } : {}),
    ...problemEvents(events, metrics),
    hostAddresses: (o) => hostAddresses.read(o).union(apiServer.read()),
    observer: {
      onReconcile: (report) => {
        metrics.update(report, core.view());
        // New pods' addresses reach the pod ranges with their targets, not at the next drain.
        unmatched?.syncRanges();
        if (core.view().firstFullListApplied && !desiredApplied) {
          // The map now holds this agent's own truth: a swap no longer needs the old map.
          desiredApplied = true;
          datapath.desiredStateApplied();
          follower.sync();
          // Start-up is over: its garbage is collected now (gc() is there with Lace's V8 flags,
          // lib/os/v8_flags.ts), not later in the middle of serving a request, and the C heap's
          // freed memory goes back to the kernel now and once more after what follows start-up.
          (globalThis as { gc?: () => void }).gc?.();
          trimMallocHeap();
          trimTimer = Number(setTimeout(() => trimMallocHeap(), 30_000));
          Deno.unrefTimer(trimTimer);
        }
      },
    },
  });

  const follower = new CgroupFollower({
    kubeletCgroup: config.kubeletCgroup,
    hostCgroupRoot: config.hostCgroupRoot,
    attacher: {
      attach: (path) => {
        const result = datapath.attach(path);
        for (const r of result.replaced) metrics.programReplacements.inc({ program: r.program });
        // A layout migration copied the old map over this one: put back what the core wants.
        if (result.replaced.length) core.runner.trigger("program swap");
        return result;
      },
      links: () => datapath.links(),
    },
    // inotify reports a recreated cgroup at once; the id check is the backstop, and once
    // a second keeps the idle agent from waking more often than that.
    checkIntervalMs: 1000,
    events: {
      emit: (type, reason, message) =>
        type === "Warning"
          ? events.warn(nodeRef, reason, message)
          : events.normal(nodeRef, reason, message),
    },
  });
  const updateAttachMetrics = () => {
    const s = follower.status();
    metrics.kubeletCgroupMismatch.set(s.mismatch ? 1 : 0);
    metrics.kubeletLookalikes.set(s.otherKubelets.length + s.otherKubeletsNotListed);
    metrics.standingBy.set(datapath.standingBy ? 1 : 0);
    for (const link of datapath.links()) {
      metrics.attached.set({ program: link.program }, s.attached && link.alive ? 1 : 0);
    }
  };
  follower.onChange((s) => {
    const pid = s.kubelet?.pid ?? null;
    const newKubelet = pid !== null && pid !== kubelet.pid;
    kubelet = { path: s.path, pid, cgroup: s.kubelet?.cgroup ?? null };
    // A new kubelet may name another API server: read its kubeconfig now, not at the next refresh.
    if (newKubelet) void apiServer.refresh();
    updateAttachMetrics();
  });

  const listeners: Listening[] = [];
  const status = agentStatus({
    core,
    datapath,
    follower,
    listeners,
    unmatched: () => unmatched,
    chaining: () => chaining?.view(),
    hostAddresses,
    apiServer,
    podRanges: config.podCidrs,
    metrics,
  });

  follower.start();
  parts.push(() => follower.stop());
  updateAttachMetrics();
  // Read before the first reconcile and the first ADD, so neither misses them.
  await apiServer.start();
  parts.push(() => apiServer.stop());
  await core.start();
  parts.push(() => core.stop());
  if (datapath.unmatched) {
    const watch = new UnmatchedWatch({
      maps: datapath.unmatched,
      cidrs: config.podCidrs.map((c) => parseCidr(c)),
      view: () => core.view(),
      events,
    });
    watch.start();
    unmatched = watch;
    parts.push(() => watch.stop());
  }
  listeners.push(
    ...await startListeners({
      config,
      status,
      metrics,
      core,
      store: datapath.store,
      chaining: { events, node: nodeRef, uninstalling: released, readRuntimeVersion },
      onChaining: (c) => chaining = c,
    }, parts),
  );
  log.info("Agent started on node {node} with pod sources {sources}", {
    node: config.nodeName || "(any)",
    sources: sources.map((s) => s.name).join(","),
  });
  if (config.podCidrs.length === 0) {
    log.warning(
      "No pod ranges (--pod-cidrs): a pod's address is not checked against them, so a pod given an address the kubelet itself connects to (a registry, an API server address none of the agent's sources names; a Multus static IP) gets probe targets there, and the kubelet's connections to it on those ports are tagged into the pod's network; set --pod-cidrs to every Lace network's pod ranges",
    );
  }
  if (!config.lifecycleHooks) {
    log.warning(
      "Lifecycle hooks are not probe targets (--lifecycle-hooks=false): the kubelet's postStart and preStop httpGet requests to pods in Lace networks go to the host's network and fail, unless a probe shares their port",
    );
  }

  let stopped: Promise<void> | undefined;
  return {
    stop() {
      stopped ??= (async () => {
        log.info("Stopping");
        const failures = await parts.runAll();
        // After every part stopped: nothing of this agent's pins or attaches any more.
        if (released && await released().catch(() => false)) {
          const problem = removeReleasePins(config.pinPath);
          if (problem) failures.push(problem);
        } else log.info("Stopped; the pinned program, links and map stay in place");
        if (failures.length) throw new AggregateError(failures, "Agent cleanup failed");
      })();
      return stopped;
    },
  };
}

/**
 * Removes Lace's pins as `lace uninstall` does, once its release is gone: the
 * links detach from the kubelet cgroup as their pins go (the agent holds no
 * other reference), so the kubelet's connections to the last targets are no
 * longer tagged into their networks. Returns the failure, logged, or undefined.
 */
function removeReleasePins(pinPath: string): Error | undefined {
  log.info("Lace's DaemonSet is gone: removing its pins under {pinPath}", { pinPath });
  let error: Error;
  try {
    const pins = removeLacePins(pinPath);
    if (pins.refused === undefined) {
      log.info("Removed {count} pins: Lace's programs are detached", {
        count: pins.removed.length,
      });
      return undefined;
    }
    error = new Error(
      `Lace's pins were not removed: ${pins.refused}: run lace uninstall on the node`,
    );
  } catch (cause) {
    const what = `Removing Lace's pins under ${pinPath} failed`;
    error = new Error(`${what}: ${cause}: run lace uninstall on the node`, { cause });
  }
  log.error("{error}; until then its links tag the kubelet's connections to the last targets", {
    error: error.message,
  });
  return error;
}

/** `read` for a scrape: a failure is logged and the scrape goes on without it (undefined). */
function orWarn<T>(what: string, read: () => T): () => T | undefined {
  return () => {
    try {
      return read();
    } catch (e) {
      log.warning(`Reading ${what} failed: {error}`, { error: String(e) });
      return undefined;
    }
  };
}
