/**
 * The agent's core, without I/O of its own: pod sources feed the pod cache,
 * each reconcile derives the targets (rules, then conflicts), turns them into
 * map entries and lets the runner apply the difference to the probe store.
 * It keeps a snapshot of what it decided (snapshot.ts) for the HTTP endpoint
 * and the CLI.
 */
import { getLogger } from "@logtape/logtape";
import type { Config } from "../config.ts";
import type { Attachment, AttachmentRef } from "../cni/protocol.ts";
import { CniAttachments } from "./admission/attachments.ts";
import { PodCache } from "../pods/cache.ts";
import type { PodLookup, PodSource } from "../pods/source.ts";
import { keyId, MAX_TARGETS, type ProbeStore } from "../probe/key.ts";
import { canonicalAddress } from "../net/address.ts";
import type { Unwritten } from "../rules/share.ts";
import { callHook, type ProblemHooks, ProblemReporter } from "./problems.ts";
import type { NodeNetworkStore } from "./admission/node_networks.ts";
import type { Backoff } from "../time/backoff.ts";
import { realTimers, type Timers } from "../time/timers.ts";
import {
  reconcile,
  reconcileFailed,
  type ReconcileInput,
  type ReconcileObserver,
  type ReconcileReport,
} from "./reconcile.ts";
import { desiredState } from "../rules/desired_state.ts";
import type { RulesMemo } from "../rules/address_placement.ts";
import { parseCidr, PodRangeSet } from "../net/cidr.ts";
import { type AdmissionHooks, admitAttachment } from "./admission/admit.ts";
import { Scheduler } from "./scheduler.ts";
import { HostAddressWatch } from "./host/address_watch.ts";
import { addressSharingPolicy } from "../rules/address_sharing.ts";
import { type AgentSnapshot, emptySnapshot, recordReport, snapshotOfState } from "./snapshot.ts";

const log = getLogger(["lace", "agent"]);

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
  | "addressSharing"
  | "maxTargetsPerPod"
  | "podCidrs"
>;

/** The hooks of ProblemHooks are each called once per problem while it persists. */
export interface AgentCoreOptions extends ProblemHooks, AdmissionHooks {
  config: AgentCoreConfig;
  store: ProbeStore;
  sources: PodSource[];
  /**
   * The node's own addresses (KubeletNetnsAddresses.read() in the agent), read at every
   * reconcile, every CNI ADD and every `hostAddressCheckMs` between them (a change reconciles):
   * no pod gets a target at one, and an ADD bringing one is refused. None when absent (unit tests).
   * `fresh` (the check's reads) asks past the reader's cache, which a reconcile's read a moment
   * before would otherwise answer for up to its TTL.
   */
  hostAddresses?: (o?: { fresh?: boolean }) => ReadonlySet<string>;
  /** How often the node's own addresses are read between reconciles (HOST_ADDRESS_CHECK_MS). */
  hostAddressCheckMs?: number;
  /**
   * Where the networks the node attached pods to outlive the agent; without
   * it they are kept in memory only, and a restart forgets them.
   */
  nodeNetworkStore?: NodeNetworkStore;
  /** Every reconcile's report (for metrics). */
  observer?: ReconcileObserver;
  /**
   * Reads a pod from the API at a CNI ADD whose conf names no network and
   * whose pod the cache shows without network annotations (exclusive only).
   */
  podLookup?: PodLookup;
  timers?: Timers;
  /** Retry delays after failed reconciles; default 500 ms doubling to 30 s. */
  backoff?: Backoff;
}

/** Wires sources, cache, rules and runner; see the module comment. */
export class AgentCore {
  readonly cache: PodCache;
  /** Decides when to reconcile: gathered triggers, periodic resync, retries. */
  readonly runner: Scheduler<ReconcileReport>;
  readonly #opts: AgentCoreOptions;
  #snapshot: AgentSnapshot;
  readonly #reporter: ProblemReporter;
  /** The computation's unwritten targets; the apply step adds its write failures to them. */
  #unwrittenByRules: Unwritten[] = [];
  /** What was derived from each merged pod object: one memo for the reconcile and the ADDs. */
  readonly #derived: RulesMemo = new WeakMap();
  /** The networks the node attached pods to and their interfaces' addresses (the CNI path's). */
  readonly #attachments: CniAttachments;
  /**
   * The node's own addresses read by a CNI ADD or the watch, for the next reconcile (which then
   * reads none).
   */
  #hostAddressesRead: ReadonlySet<string> | undefined;
  /** The set the last reconcile held for the host (the watch compares with it). */
  #hostAddressesHeld: ReadonlySet<string> | undefined;
  readonly #hostAddressWatch: HostAddressWatch | undefined;
  #started: PodSource[] = [];
  readonly #timers: Timers;
  /** The operator's pod ranges (--pod-cidrs), parsed once (validated with the config). */
  readonly #podRanges: PodRangeSet;

  constructor(opts: AgentCoreOptions) {
    this.#opts = opts;
    this.#snapshot = emptySnapshot(opts.config.addressSharing);
    this.#reporter = new ProblemReporter(opts);
    this.#podRanges = new PodRangeSet((opts.config.podCidrs ?? []).map((c) => parseCidr(c)));
    this.cache = new PodCache({
      nodeName: opts.config.nodeName,
      onChange: (source) => this.runner.trigger(source),
    });
    this.#attachments = new CniAttachments(this.cache, opts.nodeNetworkStore);
    for (const source of opts.sources) this.cache.register(source.name);
    const timers = opts.timers ?? realTimers;
    this.#timers = timers;
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
    const read = opts.hostAddresses;
    this.#hostAddressWatch = read && new HostAddressWatch({
      read: () => read({ fresh: true }),
      held: () => this.#hostAddressesHeld,
      changed: (set) => {
        this.#hostAddressesRead = set;
        this.runner.trigger("host-addresses");
      },
      timers,
      ...(opts.hostAddressCheckMs ? { intervalMs: opts.hostAddressCheckMs } : {}),
    });
  }

  /** Starts the runner, then every source; if one fails to start, stops the others and throws. */
  async start(): Promise<void> {
    this.runner.start();
    this.#hostAddressWatch?.start();
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
    this.#hostAddressWatch?.stop();
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
  async registerAttachment(a: Attachment, ref?: AttachmentRef): Promise<void> {
    const host = this.#opts.hostAddresses?.();
    const { learnt } = await admitAttachment(a, ref, {
      config: this.#opts.config,
      pods: this.cache,
      attachments: this.#attachments,
      hostAddresses: host,
      podRanges: this.#podRanges,
      memo: this.#derived,
      podLookup: this.#opts.podLookup,
      timers: this.#timers,
      hooks: this.#opts,
    });
    this.#attachments.add(a, ref, learnt);
    // The reconcile this ADD runs takes the set the ADD was checked against: one read per ADD.
    this.#hostAddressesRead = host;
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
   * Forgets what the CNI path said about one interface of a pod (`ref`), or
   * about the whole pod (no `ref`, or its last interface), and reconciles;
   * the pod's other interfaces keep their addresses, and other sources may
   * still know the pod.
   */
  async removeAttachment(uid: string, ref?: AttachmentRef): Promise<void> {
    const interfaceOnly = this.#attachments.remove(uid, ref);
    const report = await this.runner.runNow("cni-del");
    if (report.error) {
      const what = interfaceOnly ? "an interface of pod" : "pod";
      throw new Error(`Reconcile after removing ${what} ${uid} failed: ${report.error}`);
    }
  }

  /** Every address the CNI path attached the pod's interfaces with (CHECK of one interface). */
  interfaceAddresses(uid: string): string[] {
    return [...this.#attachments.interfaceAddresses(uid)];
  }

  /** The addresses the CNI path attached each pod's current sandbox with (held with its views'). */
  readonly #attachedAddresses = (uid: string): readonly string[] =>
    this.#attachments.interfaceAddresses(uid);

  #compute(): ReconcileInput {
    const { config } = this.#opts;
    const uids = this.cache.uids();
    const hostAddresses = this.#hostAddressesRead ?? this.#opts.hostAddresses?.();
    this.#hostAddressesRead = undefined;
    // A copy: the watch compares the next read with it, and a reader may hand out one set object.
    this.#hostAddressesHeld = hostAddresses && new Set(hostAddresses);
    const state = desiredState({
      uids,
      pods: this.cache,
      nodeNetworks: this.#attachments.nodeNetworks,
      config,
      capacity: this.#opts.store.capacity ?? MAX_TARGETS,
      memo: this.#derived,
      networkUnknown: this.#attachments.networkUnknown,
      learntNetwork: this.#attachments.learntNetwork,
      attachedAddresses: this.#attachedAddresses,
      hostAddresses,
      podRanges: this.#podRanges,
    });
    const { desired, conflicts, skips, mismatches, unwritten, withdraw } = state;
    const synced = this.cache.synced;
    if (synced) this.#attachments.forgetGonePods(uids);
    this.#snapshot = snapshotOfState(this.#snapshot, state, uids.length, synced);
    this.#unwrittenByRules = unwritten;
    this.#reporter.report({
      skips,
      conflicts,
      mismatches,
      unwritten,
      ...(addressSharingPolicy(config.addressSharing).clashIsProblem
        ? { addressClashes: state.sharedAddresses }
        : {}),
    });
    return {
      desired,
      allowDelete: synced,
      withdraw,
      ...(synced ? {} : { withdrawAt: this.#attachedSinceStart(uids) }),
      conflicts: conflicts.length,
      skips: skips.length,
    };
  }

  /**
   * The addresses the node attached to pods since this agent started (every attachment it knows,
   * before the first full list): an entry there that no pod it knows wants was left by a pod
   * deleted while no agent ran, maybe of another network, so it goes before the first full list.
   */
  #attachedSinceStart(uids: readonly string[]): Set<string> {
    const out = new Set<string>();
    for (const uid of uids) {
      for (const ip of this.#attachedAddresses(uid)) {
        try {
          out.add(canonicalAddress(ip).address);
        } catch { /* not an address: no entry is at it */ }
      }
    }
    return out;
  }

  #observe(report: ReconcileReport): void {
    const { firstFullList, failures } = recordReport(
      this.#snapshot,
      report,
      this.#unwrittenByRules,
    );
    if (firstFullList) log.info("First full pod list applied to the probe map");
    if (failures) this.#reporter.reportWriteFailures(failures);
    callHook(() => this.#opts.observer?.onReconcile?.(report));
  }
}
