/**
 * The agent's core, without I/O of its own: pod sources feed the pod cache,
 * each reconcile derives the targets (rules, then conflicts), turns them into
 * map entries and lets the runner apply the difference to the probe store.
 * It keeps a snapshot of what it decided for the HTTP endpoint and the CLI.
 */
import { getLogger } from "@logtape/logtape";
import { type Config, markFor } from "../config.ts";
import { type Attachment, AttachmentRefusedError } from "../cni/protocol.ts";
import {
  type AddressClash,
  addressClashes,
  type Conflict,
  resolveConflicts,
} from "../rules/conflicts.ts";
import type { Pod } from "../pods/pod.ts";
import { PodCache } from "../pods/cache.ts";
import type { PodSource } from "../pods/source.ts";
import {
  canonicalAddress,
  keyId,
  MAX_TARGETS,
  type ProbeEntry,
  type ProbeStore,
} from "../datapath/probe_map.ts";
import { type PodTargets, probeTargetsForPod, type Skip, type Target } from "../rules/targets.ts";
import type { NetworkMismatch, PodNetwork } from "../rules/pod_network.ts";
import { type PodPlacement, podPlacement } from "../rules/placement.ts";
import { capTargets, failedWrites, shareMap, type Unwritten } from "../rules/share.ts";
import { callHook, type ProblemHooks, ProblemReporter } from "./problems.ts";
import type { NodeNetworkStore } from "./node_networks.ts";
import type { Backoff } from "../backoff.ts";
import { realTimers, type Timers } from "../timers.ts";
import {
  reconcile,
  reconcileFailed,
  type ReconcileInput,
  type ReconcileObserver,
  type ReconcileReport,
} from "./reconcile.ts";
import { Scheduler } from "./scheduler.ts";

const log = getLogger(["lace", "agent"]);

/** The pod view the CNI path maintains, ranked below the API and the directory. */
const CNI_SOURCE = "cni";

export type AgentCoreConfig = Pick<
  Config,
  | "nodeName"
  | "networkAnnotation"
  | "networkIdAnnotation"
  | "probeMark"
  | "markShift"
  | "debounceMs"
  | "resyncMs"
  | "addressConflict"
  | "maxTargetsPerPod"
>;

/** The hooks of ProblemHooks are each called once per problem while it persists. */
export interface AgentCoreOptions extends ProblemHooks {
  config: AgentCoreConfig;
  store: ProbeStore;
  sources: PodSource[];
  /** A CNI ADD refused because its address is held by a pod of another network (for Events). */
  onAttachRefused?: (attachment: Attachment, clashes: AddressClash[]) => void;
  /**
   * Where the networks the node attached pods to outlive the agent; without
   * it they are kept in memory only, and a restart forgets them.
   */
  nodeNetworkStore?: NodeNetworkStore;
  /** Every reconcile's report (for metrics). */
  observer?: ReconcileObserver;
  timers?: Timers;
  /** Retry delays after failed reconciles; default 500 ms doubling to 30 s. */
  backoff?: Backoff;
}

/** One desired map entry and the pod and probe it serves. */
export interface TargetView extends Omit<Target, "key" | "networkId"> {
  entry: ProbeEntry;
}

export interface AgentSnapshot {
  targets: TargetView[];
  conflicts: Conflict[];
  skips: Skip[];
  /** Pods whose annotations disagree with the network the node attached them to. */
  mismatches: NetworkMismatch[];
  /**
   * Pods some of whose targets are not in the map: over the per-pod cap or
   * beyond their fair share of a full map (from the computation), or whose
   * writes failed in the last apply.
   */
  unwritten: Unwritten[];
  /** Every pod source has delivered its first full list. */
  synced: boolean;
  /** A reconcile with deletes allowed has completed without errors. */
  firstFullListApplied: boolean;
  counts: { pods: number; targets: number; conflicts: number; skips: number; mismatches: number };
  lastReconcile?: ReconcileReport;
}

/** Wires sources, cache, rules and runner; see the module comment. */
export class AgentCore {
  readonly cache: PodCache;
  /** Decides when to reconcile: gathered triggers, periodic resync, retries. */
  readonly runner: Scheduler<ReconcileReport>;
  readonly #opts: AgentCoreOptions;
  #snapshot: AgentSnapshot = {
    targets: [],
    conflicts: [],
    skips: [],
    mismatches: [],
    unwritten: [],
    synced: false,
    firstFullListApplied: false,
    counts: { pods: 0, targets: 0, conflicts: 0, skips: 0, mismatches: 0 },
  };
  readonly #reporter: ProblemReporter;
  /** The computation's unwritten targets; the apply step adds its write failures to them. */
  #unwrittenByRules: Unwritten[] = [];
  /** The rules' result per merged pod object, with the node network it was computed for. */
  readonly #derived = new WeakMap<Pod, { node: PodNetwork | undefined; result: PodTargets }>();
  /** Where each merged pod object sits (network, addresses), for refusals at attach. */
  readonly #placed = new WeakMap<
    Pod,
    { node: PodNetwork | undefined; placement: PodPlacement | undefined }
  >();
  /**
   * The network the node attached each pod to, by uid, as the CNI path reported it:
   * authoritative over the pod's annotations, which the pod's author can write.
   */
  readonly #nodeNetworks = new Map<string, PodNetwork>();
  #started: PodSource[] = [];

  constructor(opts: AgentCoreOptions) {
    this.#opts = opts;
    this.#reporter = new ProblemReporter(opts);
    for (const [uid, net] of opts.nodeNetworkStore?.load() ?? []) this.#nodeNetworks.set(uid, net);
    this.cache = new PodCache({
      nodeName: opts.config.nodeName,
      onChange: (source) => this.runner.trigger(source),
    });
    for (const source of opts.sources) this.cache.register(source.name);
    const timers = opts.timers ?? realTimers;
    this.runner = new Scheduler({
      run: async (reason) => {
        const report = await reconcile(
          reason,
          opts.store,
          () => this.#compute(),
          () => timers.now(),
        );
        try {
          this.#observe(report);
        } catch (error) {
          log.error("Reconcile observer failed: {error}", { error });
        }
        return report;
      },
      failed: reconcileFailed,
      minIntervalMs: opts.config.debounceMs,
      maxIntervalMs: opts.config.resyncMs,
      backoff: opts.backoff,
      timers,
      onRetry: (delay, attempt) =>
        log.warning("Reconcile incomplete; retrying in {delay}ms (attempt {attempt})", {
          delay,
          attempt,
        }),
    });
  }

  /** Starts the runner, then every source; if one fails to start, stops the others and throws. */
  async start(): Promise<void> {
    this.runner.start();
    for (const source of this.#opts.sources) {
      try {
        await source.start(this.cache);
        this.#started.push(source);
      } catch (error) {
        await this.stop();
        throw new Error(`Pod source "${source.name}" failed to start`, { cause: error });
      }
    }
    log.info("Agent core started with sources {sources}", {
      sources: this.#opts.sources.map((s) => s.name),
    });
  }

  /** Stops sources and runner; leaves the store (the pinned map) exactly as it is. */
  async stop(): Promise<void> {
    for (const source of this.#started.splice(0)) {
      try {
        await source.stop();
      } catch (error) {
        log.warning("Stopping pod source {source} failed: {error}", { source: source.name, error });
      }
    }
    await this.runner.stop();
  }

  /**
   * The last computed state without copying it, for readers on hot paths
   * (metrics after every reconcile, /readyz, /targets, CNI CHECK): with 10k
   * targets a copy per call costs more than the reconcile. Callers must not
   * change it; the next reconcile replaces it.
   */
  view(): Readonly<AgentSnapshot> {
    return { ...this.#snapshot, synced: this.cache.synced };
  }

  /** Reconciles right away; resolves with the report of a run that saw everything known now. */
  reconcileNow(reason = "now"): Promise<ReconcileReport> {
    return this.runner.runNow(reason);
  }

  /**
   * Records what the CNI path knows of a pod (addresses, network) and resolves
   * once the resulting targets are in the store. The API's spec still decides
   * which probes exist; the addresses become known early, and the network the
   * node attached the pod to becomes its network for every target, whatever
   * its annotations say. Rejects if the reconcile failed or any of this pod's
   * entries was not written.
   */
  async registerAttachment(a: Attachment): Promise<void> {
    this.#refuseClashes(a);
    if (a.network !== undefined && a.networkId !== undefined) {
      const known = this.#nodeNetworks.get(a.uid);
      if (known?.network !== a.network || known.networkId !== a.networkId) {
        this.#nodeNetworks.set(a.uid, { network: a.network, networkId: a.networkId });
        this.#opts.nodeNetworkStore?.save(this.#nodeNetworks);
      }
    }
    const pod: Pod = {
      metadata: { namespace: a.namespace, name: a.name, uid: a.uid },
      spec: { containers: [] },
      status: { podIPs: a.ips.map((ip) => ({ ip })) },
    };
    this.cache.upsert(CNI_SOURCE, pod);
    const report = await this.runner.runNow("cni-add");
    if (report.error) {
      throw new Error(`Reconcile for pod ${a.namespace}/${a.name} failed: ${report.error}`);
    }
    const mine = new Set(
      this.#snapshot.targets.filter((t) => t.pod.uid === a.uid).map((t) => keyId(t.entry.key)),
    );
    const failed = report.ops.filter((o) => !o.ok && mine.has(keyId(o.key)));
    if (failed.length) {
      throw new Error(
        `Writing probe targets of pod ${a.namespace}/${a.name} failed: ${failed[0].error}`,
      );
    }
  }

  /**
   * Refuses an attachment that brings an address a live pod of another network
   * already holds on this node: the kubelet's probes of either pod could be
   * delivered into the other's network. Throws AttachmentRefusedError, which
   * the CNI server turns into a refusal that fails the ADD (the runtime
   * retries, and the address manager picks another address). Refuses only on
   * what the agent knows: no network in the ADD, or a holder whose network is
   * unknown, is no refusal.
   */
  #refuseClashes(a: Attachment): void {
    if (a.networkId === undefined) return;
    const placements: PodPlacement[] = [];
    for (const uid of this.cache.uids()) {
      try {
        const pod = this.cache.get(uid)!;
        const node = this.#nodeNetworks.get(uid);
        // Cached per merged pod object, as the rules are: an ADD costs a lookup per pod.
        let placed = this.#placed.get(pod);
        if (!placed || placed.node !== node) {
          placed = { node, placement: podPlacement(pod, this.#opts.config, node) };
          this.#placed.set(pod, placed);
        }
        if (placed.placement) placements.push(placed.placement);
      } catch { /* a pod that cannot be evaluated is reported by the reconcile */ }
    }
    const addresses = a.ips.flatMap((ip) => {
      try {
        return [canonicalAddress(ip).address];
      } catch {
        return [];
      }
    });
    const clashes = addressClashes({ uid: a.uid, networkId: a.networkId, addresses }, placements);
    if (clashes.length === 0) return;
    log.warning(
      "Refused the CNI ADD of pod {pod} (network {network}): address {address} is held by pod {holder} of network {holderNetwork}",
      {
        pod: `${a.namespace}/${a.name}`,
        network: a.network,
        address: clashes[0].address,
        holder: `${clashes[0].holder.namespace}/${clashes[0].holder.name}`,
        holderNetwork: clashes[0].holderNetwork.network || "(default)",
      },
    );
    callHook(() => this.#opts.onAttachRefused?.(a, clashes));
    throw new AttachmentRefusedError(
      `Address ${
        clashes[0].address
      } is already used on this node by a pod of another network: the kubelet's probes could be delivered into the wrong network, so this attachment is refused; retry with another address (node-local pod addresses must be unique across networks)`,
    );
  }

  /** Forgets the CNI view of a pod and reconciles; other sources may still know the pod. */
  async removeAttachment(uid: string): Promise<void> {
    if (this.#nodeNetworks.delete(uid)) this.#opts.nodeNetworkStore?.save(this.#nodeNetworks);
    this.cache.remove(CNI_SOURCE, uid);
    const report = await this.runner.runNow("cni-del");
    if (report.error) {
      throw new Error(`Reconcile after removing pod ${uid} failed: ${report.error}`);
    }
  }

  #compute(): ReconcileInput {
    const { config } = this.#opts;
    const uids = this.cache.uids();
    // Targets, and claims that take part in conflicts but get no entry: those of
    // default-network pods and those over a pod's cap.
    const all: Target[] = [];
    const claimsOnly = new Set<Target>();
    const rank = new Map<Target, number>();
    const skips: Skip[] = [];
    const mismatches: NetworkMismatch[] = [];
    const unwritten: Unwritten[] = [];
    for (const uid of uids) {
      // Each pod on its own: whatever one pod's objects make throw (a manifest nested
      // thousands of levels deep, a shape nobody foresaw) costs that pod its targets only.
      try {
        const pod = this.cache.get(uid)!;
        const node = this.#nodeNetworks.get(uid);
        // The cache hands back the same object until the pod changes, so the rules run
        // once per pod change rather than once per pod per reconcile.
        let derived = this.#derived.get(pod);
        if (!derived || derived.node !== node) {
          derived = { node, result: probeTargetsForPod(pod, config, node) };
          this.#derived.set(pod, derived);
        }
        const { writable, over, unwritten: capped } = capTargets(
          derived.result.targets,
          config.maxTargetsPerPod,
        );
        writable.forEach((t, i) => rank.set(t, i));
        for (const t of [...over, ...(derived.result.claims ?? [])]) claimsOnly.add(t);
        all.push(...writable, ...over, ...(derived.result.claims ?? []));
        if (capped) unwritten.push(capped);
        skips.push(...derived.result.skipped);
        if (derived.result.mismatch) mismatches.push(derived.result.mismatch);
      } catch (error) {
        skips.push(this.#unusable(uid, error));
      }
    }
    const { targets: winners, conflicts } = resolveConflicts(all, config.addressConflict);
    const { kept, unwritten: overflow } = shareMap(
      winners.filter((t) => !claimsOnly.has(t)),
      (t) => rank.get(t) ?? 0,
      this.#opts.store.capacity ?? MAX_TARGETS,
    );
    unwritten.push(...overflow);
    const desired = new Map<string, ProbeEntry>();
    const views: TargetView[] = [];
    for (
      const { key, networkId, ...rest } of kept
    ) {
      const entry = { key, value: { networkId, mark: markFor(config, networkId) } };
      desired.set(keyId(key), entry);
      views.push({ entry, ...rest });
    }
    const synced = this.cache.synced;
    if (synced) this.#forgetGonePods(uids);
    this.#snapshot = {
      ...this.#snapshot,
      targets: views,
      conflicts,
      skips,
      mismatches,
      unwritten,
      synced,
      counts: {
        pods: uids.length,
        targets: views.length,
        conflicts: conflicts.length,
        skips: skips.length,
        mismatches: mismatches.length,
      },
    };
    this.#unwrittenByRules = unwritten;
    this.#reporter.report({ skips, conflicts, mismatches, unwritten });
    // A conflicted key nobody keeps leaves the map even before the first full list: an
    // entry a previous agent wrote for it would deliver probes into another network.
    const withdraw = conflicts.map((c) => c.key).filter((k) => !desired.has(keyId(k)));
    return {
      desired,
      allowDelete: synced,
      withdraw,
      conflicts: conflicts.length,
      skips: skips.length,
    };
  }

  /**
   * Forgets the node's network of pods no source knows any more (deleted while
   * the agent was away, or without a CNI DEL), once every source has listed.
   */
  #forgetGonePods(uids: string[]): void {
    if (this.#nodeNetworks.size === 0) return;
    const known = new Set(uids);
    let changed = false;
    for (const uid of [...this.#nodeNetworks.keys()]) {
      if (!known.has(uid)) changed = this.#nodeNetworks.delete(uid) || changed;
    }
    if (changed) this.#opts.nodeNetworkStore?.save(this.#nodeNetworks);
  }

  /** The skip for a pod whose views could not be merged or evaluated. */
  #unusable(uid: string, error: unknown): Skip {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      pod: this.cache.identity(uid) ?? { namespace: "", name: "", uid },
      reason: "malformed",
      message: `The pod could not be evaluated and gets no probe targets: ${reason}`,
    };
  }

  #observe(report: ReconcileReport): void {
    const clean = !report.error && report.ops.every((o) => o.ok);
    if (report.allowDelete && clean && !this.#snapshot.firstFullListApplied) {
      log.info("First full pod list applied to the probe map");
      this.#snapshot.firstFullListApplied = true;
    }
    this.#snapshot.lastReconcile = report;
    if (!report.error) {
      const failures = failedWrites(
        report.ops.filter((o) => o.op === "put" && !o.ok),
        this.#snapshot.targets.map((t) => ({ key: t.entry.key, pod: t.pod })),
      );
      this.#snapshot.unwritten = [...this.#unwrittenByRules, ...failures];
      this.#reporter.reportWriteFailures(failures);
    }
    callHook(() => this.#opts.observer?.onReconcile?.(report));
  }
}
