/**
 * An in-memory NetcheckCluster for fast tests and the scheduling benchmark:
 * namespaces, DaemonSets, pod lists and execs over fake nodes (fake_nodes.ts)
 * whose pods MemoryPods places and whose answers memory_exec.ts models. It
 * checks the scheduling rules as it runs (no endpoint shared by two bandwidth
 * sessions, the concurrency bound) and counts what happened.
 */
import type {
  ExecOptions,
  ExecResult,
  NetcheckCluster,
  ProbePod,
} from "../../lib/netcheck/cluster/netcheck_cluster.ts";
import type { FakeNode } from "./fake_nodes.ts";
import { MemoryLeases } from "./memory_leases.ts";
import { MemoryPods, type PodAddressing } from "./memory_pods.ts";
import {
  connectAnswer,
  curlAnswer,
  execTarget,
  IperfServers,
  mtuAnswer,
  transferAnswer,
  udpDatagramsAnswer,
} from "./memory_exec.ts";

export { type FakeNode, fakeNodes } from "./fake_nodes.ts";

export interface MemoryClusterOptions extends PodAddressing {
  /** Simulated duration of every exec, ms (0: next macrotask). */
  execMs?: number;
  /** List calls before pods become ready. */
  readyAfterLists?: number;
  /** Count every executed path (tests); off for memory measurements. */
  recordPaths?: boolean;
  /** Called at the start of each exec (e.g. to interrupt a run). */
  onExec?: (pod: string, command: string[]) => void;
  /** Runs `iperf3 -c` output through this (e.g. to append text or errors). */
  iperfOutput?: (json: string, from: string, to: string) => ExecResult;
  /**
   * Replaces any exec's answer (a hostile pod's output): called with the answer the model
   * gave and the exec; what it returns is what netcheck gets.
   */
  rewrite?: (
    answer: ExecResult,
    exec: { pod: string; container: string; command: string[] },
  ) => ExecResult;
}

export class MemoryCluster extends MemoryLeases implements NetcheckCluster {
  readonly namespaces = new Set<string>();
  readonly daemonSets = new Map<string, Record<string, unknown>>();
  readonly nodes: FakeNode[];
  /** Executed paths by "phase from→to" (when recordPaths). */
  readonly pathCounts = new Map<string, number>();
  /** Every rule broken while running; tests expect it empty. */
  readonly violations: string[] = [];
  active = 0;
  maxActive = 0;
  execs = 0;
  daemonSetPatches = 0;
  #busyPods = new Set<string>();
  #lists = 0;
  #pods: MemoryPods;
  #iperf: IperfServers;

  constructor(nodes: FakeNode[], readonly options: MemoryClusterOptions = {}) {
    super();
    this.nodes = nodes;
    this.#pods = new MemoryPods(nodes, this.daemonSets, options);
    this.#iperf = new IperfServers(
      nodes,
      (json, from, to) => this.options.iperfOutput?.(json, from, to),
    );
  }

  ensureNamespace(namespace: string): Promise<void> {
    this.namespaces.add(namespace);
    return Promise.resolve();
  }

  applyDaemonSet(namespace: string, manifest: Record<string, unknown>): Promise<void> {
    if (!this.namespaces.has(namespace)) return Promise.reject(new Error("namespace not found"));
    const name = (manifest.metadata as { name: string }).name;
    if (this.daemonSets.has(name)) this.daemonSetPatches++;
    this.daemonSets.set(name, manifest);
    this.#lists = 0;
    return Promise.resolve();
  }

  daemonSetDesired(_namespace: string, name: string): Promise<number | null> {
    return Promise.resolve(this.daemonSets.has(name) ? this.nodes.length : null);
  }

  deleteDaemonSet(_namespace: string, name: string): Promise<void> {
    this.daemonSets.delete(name);
    return Promise.resolve();
  }

  /** The node holding `address` (its own, not a pod's shifted one), if any. */
  nodeAt(address: string): FakeNode | undefined {
    return this.#pods.nodeAt(address);
  }

  listPods(namespace: string, labelSelector: string): Promise<ProbePod[]> {
    this.#lists++;
    const started = this.#lists > (this.options.readyAfterLists ?? 0);
    const pods: ProbePod[] = [];
    for (const [ds, manifest] of this.daemonSets) {
      if (!this.#pods.selects(manifest, namespace, labelSelector)) continue;
      for (const node of this.nodes) {
        const ready = started && !node.cordoned && !node.waitingReason && !node.neverReady;
        const name = this.#pods.podName(ds, node);
        pods.push({
          name,
          nodeName: node.name,
          phase: ready ? "Running" : "Pending",
          ready,
          podIPs: ready ? this.#pods.addressesOf(manifest, node) : [],
          unschedulable: !!node.cordoned,
          containerReasons: started && node.waitingReason ? { connect: node.waitingReason } : {},
        });
      }
    }
    return Promise.resolve(pods);
  }

  async exec(
    namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    const answer = await this.#exec(namespace, pod, container, command, options);
    return this.options.rewrite?.(answer, { pod, container, command }) ?? answer;
  }

  async #exec(
    _namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    this.execs++;
    this.options.onExec?.(pod, command);
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    const source = this.#pods.pod(pod);
    const from = source?.node;
    const isBandwidth = container === "bandwidth";
    const isCurl = command[0] === "curl";
    const answering = this.#pods.route(source?.network ?? "", execTarget(container, command));
    const target = answering?.node;
    const lockKeys = isBandwidth && from && target ? [from.name, target.name] : [];
    for (const k of lockKeys) {
      if (this.#busyPods.has(k)) this.violations.push(`endpoint ${k} shared by two sessions`);
      this.#busyPods.add(k);
    }
    try {
      await this.#delay(options.signal);
      if (options.signal?.aborted) {
        return { exitCode: -1, stdout: "", stderr: "", error: "aborted" };
      }
      if (!from) return { exitCode: -1, stdout: "", stderr: "", error: `pod "${pod}" not found` };
      if (this.options.recordPaths) {
        const kind = isCurl ? "latency" : command.includes("--protocol=udp") ? "udp" : container;
        const key = `${kind} ${from.name}→${target?.name}`;
        this.pathCounts.set(key, (this.pathCounts.get(key) ?? 0) + 1);
      }
      if (isCurl && command.includes("file:///sys/class/net/eth0/mtu")) {
        return mtuAnswer(from, target, command);
      }
      if (isCurl) {
        const answeredBy = answering ? this.#pods.podName(answering.ds, answering.node) : "";
        return curlAnswer(from, target, answeredBy, command);
      }
      if (command.includes("--protocol=udp") && (from.udpBlocked || target?.udpBlocked)) {
        return { exitCode: 1, stdout: "", stderr: "TIMEOUT\n" };
      }
      if (isBandwidth && command.includes("-u")) return udpDatagramsAnswer(from, target, command);
      if (isBandwidth && command.includes("-n")) return transferAnswer(from, target);
      return isBandwidth ? this.#iperf.answer(from, target) : connectAnswer(from, target);
    } finally {
      for (const k of lockKeys) this.#busyPods.delete(k);
      this.active--;
    }
  }

  #delay(signal?: AbortSignal): Promise<void> {
    // Timers clamp to about a millisecond; zero means "yield to other tasks" only.
    if (!this.options.execMs) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, this.options.execMs ?? 0);
      function done() {
        clearTimeout(timer);
        signal?.removeEventListener("abort", done);
        resolve();
      }
      signal?.addEventListener("abort", done, { once: true });
    });
  }
}
