/**
 * The agent's Prometheus metrics, all prefixed `lace_`. One registry per
 * agent (tests run several); the BPF counters are read at scrape time, so a
 * scrape costs one per-CPU map lookup and nothing runs between scrapes.
 * They are served on the node's IP, which every pod can reach: no label names a
 * pod, an address or a network (networks appear by id, `network_id`); the
 * names stay on the root-only local socket.
 */
import type { Counter, Gauge, Histogram, Registry } from "prom-client";
// The four classes Lace uses, from their own files: prom-client's index also loads its push
// gateway, default metrics and cluster aggregator (node:http, https, zlib, cluster, perf_hooks),
// megabytes of RSS in every agent for nothing it uses.
import counterClass from "prom-client/lib/counter.js";
import gaugeClass from "prom-client/lib/gauge.js";
import histogramClass from "prom-client/lib/histogram.js";
import registryClass from "prom-client/lib/registry.js";

const CounterClass = counterClass as typeof Counter;
const GaugeClass = gaugeClass as typeof Gauge;
const HistogramClass = histogramClass as typeof Histogram;
const RegistryClass = registryClass as typeof Registry;
import type { Counters } from "../datapath/pins.ts";
import { ABI_VERSION } from "../datapath/probe_map.ts";
import { keyId } from "../probe/key.ts";
import { addressSharingPolicy } from "../rules/address_sharing.ts";
import type { AgentSnapshot } from "./snapshot.ts";
import type { ReconcileReport } from "./reconcile.ts";
import type { NetworkConnects } from "./unmatched_watch.ts";
import { type BuildInfo, VERSION } from "../version.ts";
import { EVENT_DROP_REASONS } from "../kube/event_drops.ts";
import { registerProcessMetrics } from "../os/process_metrics.ts";
import type { FileReport } from "../cni/chaining/chainer.ts";

/** Every outcome of chaining, each series from 0: an alert's increase() then sees the first. */
const CNI_CHAINING_OUTCOMES: Record<FileReport["reason"], true> = {
  chained: true,
  restored: true,
  unparsable: true,
  refused: true,
  conflict: true,
  "hand-chained": true,
  failed: true,
  unsafe: true,
  "bad-record": true,
  raced: true,
  "no-runtime-file": true,
  "no-plugin": true,
};

export type ConnectCounters = Pick<
  Counters,
  "connect4Seen" | "connect4Tagged" | "connect6Seen" | "connect6Tagged"
>;

export class Metrics {
  readonly registry = new RegistryClass();
  readonly probeTargets: Gauge<"family" | "network_id">;
  readonly reconcileTotal: Counter<"result">;
  readonly reconcileDuration: Histogram;
  readonly mapOperations: Counter<"op" | "result">;
  readonly targetConflicts: Gauge;
  readonly addressClashes: Gauge;
  readonly sharedAddresses: Gauge;
  readonly networkMismatches: Gauge;
  readonly attachRefusals: Counter<"reason">;
  readonly eventsDropped: Counter<"reason">;
  readonly cniChaining: Counter<"outcome">;
  readonly cniChainedFiles: Gauge;
  readonly targetsUnwritten: Gauge<"reason">;
  readonly probesIgnored: Gauge<"reason">;
  readonly watchRestarts: Counter;
  readonly acceptErrors: Counter<"listener">;
  readonly listenerFailing: Gauge<"listener">;
  readonly listenerCapped: Counter<"listener" | "cap" | "outcome">;
  readonly attached: Gauge<"program">;
  readonly kubeletCgroupMismatch: Gauge;
  readonly kubeletLookalikes: Gauge;
  readonly hostAddressesFallback: Gauge;
  readonly agentOtherNetns: Gauge;
  readonly apiServerSourcesFailing: Gauge;
  readonly programReplacements: Counter<"program">;
  readonly standingBy: Gauge;

  /**
   * `readCounters` and `readMap` are called at scrape time; either may return
   * undefined when the kernel cannot be asked (the sample is then left out).
   */
  constructor(
    readCounters: () => ConnectCounters | undefined,
    readMap: () => { entries: number; capacity: number } | undefined = () => undefined,
    /** The map layout of the object the agent runs (LACE_BPF_OBJECT may pick another). */
    bpfAbi = ABI_VERSION,
    readNetworks: () => NetworkConnects[] | undefined = () => undefined,
    /** The commit and build date `lace version` shows, so a rollout's mix of builds is visible. */
    build: Pick<BuildInfo, "commit" | "buildDate"> = { commit: "unknown", buildDate: "" },
  ) {
    const registers = [this.registry];
    this.probeTargets = new GaugeClass({
      name: "lace_probe_targets",
      help:
        "Probe targets of this node's pods that are in the map as the agent wants them, by family and network id",
      labelNames: ["family", "network_id"],
      registers,
    });
    this.targetsUnwritten = new GaugeClass({
      name: "lace_probe_targets_unwritten",
      help:
        "Probe targets of this node's pods that are not in the map, by reason (cap: over --max-targets-per-pod; map-full: beyond a fair share of the map, or the kernel found it full; write-error)",
      labelNames: ["reason"],
      registers,
    });
    const mapGauge = (name: string, help: string, pick: "entries" | "capacity") =>
      new GaugeClass({
        name,
        help,
        registers,
        collect() {
          const map = readMap();
          if (map) this.set(map[pick]);
        },
      });
    mapGauge(
      "lace_probe_map_entries",
      "Entries in the probe map now, read from the kernel at scrape time",
      "entries",
    );
    mapGauge("lace_probe_map_capacity", "How many entries the probe map can hold", "capacity");
    this.reconcileTotal = new CounterClass({
      name: "lace_reconcile_total",
      help: "Reconciles of the probe map, by result",
      labelNames: ["result"],
      registers,
    });
    this.reconcileDuration = new HistogramClass({
      name: "lace_reconcile_duration_seconds",
      help: "Time one reconcile took, from reading the map to the last write",
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1],
      registers,
    });
    this.mapOperations = new CounterClass({
      name: "lace_map_operations_total",
      help: "Writes to the probe map, by operation (update, delete) and result (ok, error)",
      labelNames: ["op", "result"],
      registers,
    });
    this.targetConflicts = new GaugeClass({
      name: "lace_target_conflicts",
      help:
        "Probe addresses and ports claimed by pods of more than one network on this node (fail-closed: tagged for none; older-wins: for the older pod)",
      registers,
    });
    // Counts only, never a network's name: the series say nothing of who shares with whom.
    this.addressClashes = new GaugeClass({
      name: "lace_address_clashes",
      help:
        "Addresses on this node that pods of more than one network hold under --address-sharing=exclusive: the later pods get no probe target at them (nor the holder, when a later pod is on the default network)",
      registers,
    });
    this.sharedAddresses = new GaugeClass({
      name: "lace_shared_addresses",
      help:
        "Addresses on this node that pods of two or more networks hold under --address-sharing=shared: a pod at one can redirect the kubelet's probes into another network there",
      registers,
    });
    this.attachRefusals = new CounterClass({
      name: "lace_cni_add_refusals_total",
      help:
        "CNI ADDs the agent refused, by reason (address-conflict: a pod of another network holds the address; second-network: the pod is attached to another Lace network already; host-address: the address is one of the node's own; outside-pod-ranges: the address is outside every --pod-cidrs range)",
      labelNames: ["reason"],
      registers,
    });
    // By reason only: a namespace label would be unbounded and would tell every pod (the port is
    // open to them) which namespaces have trouble; the log line names the namespace and object.
    this.eventsDropped = new CounterClass({
      name: "lace_events_dropped_total",
      help:
        "Kubernetes Events the agent did not write, by reason (rate-limited: the object's burst was spent; namespace-full: its namespace had 100 waiting; queue-full: 1000 waiting and its namespace as many as any; displaced: made room for a namespace with fewer waiting; invalid: a name too long; api-error: refused or failing API; shutdown)",
      labelNames: ["reason"],
      registers,
    });
    for (const reason of EVENT_DROP_REASONS) this.eventsDropped.inc({ reason }, 0);
    this.cniChaining = new CounterClass({
      name: "lace_cni_chaining_total",
      help:
        "Outcomes of chaining the lace plugin into the node's CNI configuration, per file: chained, restored, unparsable (left alone, or skipped by the runtime), refused, conflict, hand-chained, failed (the pass or a file's write: retried), unsafe (a directory or file someone other than root may change, or a symlink: not written), bad-record (a state record that is not the agent's data: ignored), raced (another writer changed the file through every attempt of a pass), no-runtime-file (the runtime uses no file of the directory)",
      labelNames: ["outcome"],
      registers,
    });
    for (const outcome of Object.keys(CNI_CHAINING_OUTCOMES)) {
      this.cniChaining.inc({ outcome }, 0);
    }
    this.cniChainedFiles = new GaugeClass({
      name: "lace_cni_chained_files",
      help: "CNI configuration files the agent keeps the lace plugin chained into",
      registers,
    });
    this.networkMismatches = new GaugeClass({
      name: "lace_network_annotation_mismatches",
      help:
        "Pods whose network annotations disagree with the network the node attached them to (the node's is used)",
      registers,
    });
    this.probesIgnored = new GaugeClass({
      name: "lace_probes_ignored",
      help: "Probes that get no target, by reason",
      labelNames: ["reason"],
      registers,
    });
    this.watchRestarts = new CounterClass({
      name: "lace_watch_restarts_total",
      help: "Restarts of the Kubernetes pod watch after it failed",
      registers,
    });
    this.acceptErrors = new CounterClass({
      name: "lace_listener_accept_errors_total",
      help: "Failed accepts on a listener (http, local, cni), retried with backoff",
      labelNames: ["listener"],
      registers,
    });
    this.listenerFailing = new GaugeClass({
      name: "lace_listener_failing",
      help: "1 while a listener's accepts keep failing (it takes no connections; not ready)",
      labelNames: ["listener"],
      registers,
    });
    this.listenerCapped = new CounterClass({
      name: "lace_listener_capped_total",
      help: "Connections a listener refused at a cap (connections: all open; peer: from one " +
        "address), or idle keep-alive ones it closed to make room, by outcome",
      labelNames: ["listener", "cap", "outcome"],
      registers,
    });
    this.attached = new GaugeClass({
      name: "lace_attached",
      help: "1 when the program is attached to the kubelet cgroup through a live link",
      labelNames: ["program"],
      registers,
    });
    this.kubeletCgroupMismatch = new GaugeClass({
      name: "lace_kubelet_cgroup_mismatch",
      help: "1 when a kubelet process runs outside the cgroup the programs are attached to",
      registers,
    });
    this.kubeletLookalikes = new GaugeClass({
      name: "lace_kubelet_lookalikes",
      help: "Kubelet-looking processes not followed (in a container or pod cgroup, another " +
        "mount namespace, not root, or a second kubelet elsewhere)",
      registers,
    });
    this.hostAddressesFallback = new GaugeClass({
      name: "lace_host_addresses_fallback",
      help: "1 when the node's own addresses cannot be read from the kubelet's network " +
        "namespace and the last set read there plus the agent's own are held instead",
      registers,
    });
    this.agentOtherNetns = new GaugeClass({
      name: "lace_agent_other_netns",
      help: "1 when the agent runs in another network namespace than the kubelet",
      registers,
    });
    this.apiServerSourcesFailing = new GaugeClass({
      name: "lace_api_server_sources_failing",
      help: "Sources of the API server's addresses (the agent's and the kubelet's kubeconfig, " +
        "the kubernetes Service and EndpointSlice) whose last read failed; the addresses each gave " +
        "last are still held",
      registers,
    });
    this.programReplacements = new CounterClass({
      name: "lace_program_replacements_total",
      help: "Pinned links found running another program (another release or build) and " +
        "swapped in place to this agent's",
      labelNames: ["program"],
      registers,
    });
    this.standingBy = new GaugeClass({
      name: "lace_standing_by",
      help: "1 while this agent leaves Lace's links to a live agent of a newer map layout " +
        "(or a later start of the same layout) and does not swap its program in",
      registers,
    });
    const counter = (name: string, help: string, pick: (c: ConnectCounters) => [bigint, bigint]) =>
      new CounterClass({
        name,
        help,
        labelNames: ["family"],
        registers,
        // The kernel keeps these monotonic counts; each scrape copies them over.
        collect() {
          const c = readCounters();
          if (!c) return;
          const [v4, v6] = pick(c);
          this.reset();
          this.inc({ family: "ipv4" }, Number(v4));
          this.inc({ family: "ipv6" }, Number(v6));
        },
      });
    counter(
      "lace_connects_total",
      "TCP connects seen by the programs in the kubelet cgroup (from BPF counters)",
      (c) => [c.connect4Seen, c.connect6Seen],
    );
    counter(
      "lace_connects_tagged_total",
      "TCP connects tagged with a probe mark (from BPF counters)",
      (c) => [c.connect4Tagged, c.connect6Tagged],
    );
    const perNetwork = (name: string, help: string, pick: (n: NetworkConnects) => bigint) =>
      new CounterClass({
        name,
        help,
        labelNames: ["network_id"],
        registers,
        // Per network only, never per pod or address: the series are bounded by networks.
        collect() {
          const networks = readNetworks();
          if (!networks) return;
          this.reset();
          for (const n of networks) this.inc({ network_id: String(n.networkId) }, Number(pick(n)));
        },
      });
    perNetwork(
      "lace_probe_connects_total",
      "Kubelet TCP connects into a Lace network: tagged for a target, or into its pod ranges " +
        "matching none (network id 0: --pod-cidrs of no known network)",
      (n) => n.connects,
    );
    perNetwork(
      "lace_probe_unmatched_total",
      "Kubelet TCP connects into a Lace network's pod ranges that matched no probe target " +
        "(the probe cannot reach the pod); lace doctor lists the recent ones",
      (n) => n.unmatched,
    );
    new GaugeClass({
      name: "lace_build_info",
      help: "Version, commit and build date of the agent, and its BPF map layout",
      labelNames: ["version", "commit", "build_date", "bpf_abi"],
      registers,
    }).set({
      version: VERSION,
      commit: build.commit,
      build_date: build.buildDate,
      bpf_abi: String(bpfAbi),
    }, 1);
    // process_start_time_seconds and the rest, for restart, memory and CPU alerts.
    registerProcessMetrics(this.registry);
  }

  /**
   * Records one reconcile and the state it left: operations, durations, and
   * the targets, conflicts and problems of `snapshot`. `lace_probe_targets`
   * counts what is in the map, so a target whose put failed is left out; a
   * reconcile that failed as a whole leaves the state gauges as they were.
   */
  update(report: ReconcileReport, snapshot: Readonly<AgentSnapshot>): void {
    this.reconcileTotal.inc({ result: report.error ? "error" : "ok" });
    this.reconcileDuration.observe(report.durationMs / 1000);
    for (const op of report.ops) {
      this.mapOperations.inc({
        op: op.op === "put" ? "update" : "delete",
        result: op.ok ? "ok" : "error",
      });
    }
    if (!report.error) {
      // What is in the map, not what is wanted: a target whose put failed is not counted.
      const failed = new Set(
        report.ops.filter((o) => o.op === "put" && !o.ok).map((o) => keyId(o.key)),
      );
      this.probeTargets.reset();
      for (const t of snapshot.targets) {
        if (failed.has(keyId(t.entry.key))) continue;
        this.probeTargets.inc({
          family: t.entry.key.family,
          network_id: String(t.entry.value.networkId),
        });
      }
      this.targetsUnwritten.reset();
      for (const u of snapshot.unwritten) this.targetsUnwritten.inc({ reason: u.reason }, u.count);
    }
    this.targetConflicts.set(snapshot.conflicts.length);
    const clashes = addressSharingPolicy(snapshot.addressSharing).clashIsProblem;
    this.addressClashes.set(clashes ? snapshot.sharedAddresses.length : 0);
    this.sharedAddresses.set(clashes ? 0 : snapshot.sharedAddresses.length);
    this.networkMismatches.set(snapshot.mismatches.length);
    this.probesIgnored.reset();
    for (const s of snapshot.skips) this.probesIgnored.inc({ reason: s.reason });
  }

  /** The exposition text for /metrics. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
