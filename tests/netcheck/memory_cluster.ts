/**
 * An in-memory NetcheckCluster for fast tests and the scheduling benchmark:
 * nodes with addresses, per-node faults, and a model of agnhost and iperf3
 * answers. It checks the scheduling rules as it runs (no endpoint shared by
 * two bandwidth sessions, the concurrency bound) and counts what happened.
 */
import type {
  ExecOptions,
  ExecResult,
  NetcheckCluster,
  ProbePod,
} from "../../lib/netcheck/cluster/netcheck_cluster.ts";
import { MemoryLeases } from "./memory_leases.ts";
import { NETWORK_LABEL } from "../../lib/netcheck/cluster/manifest.ts";
import {
  connectAnswer,
  curlAnswer,
  mtuAnswer,
  transferAnswer,
  udpDatagramsAnswer,
  unreachableIperf,
} from "./memory_exec.ts";

export interface FakeNode {
  name: string;
  ipv4?: string;
  ipv6?: string;
  /** Its pod stays Pending, unschedulable. */
  cordoned?: boolean;
  /** A container waiting reason, e.g. ImagePullBackOff. */
  waitingReason?: string;
  /** Nothing reaches it and it reaches nothing (connect TIMEOUT). */
  unreachable?: boolean;
  /** Its port 1199 refuses connections (connect REFUSED). */
  refuses?: boolean;
  /** Its iperf3 server answers "busy" this many times first. */
  busyTimes?: number;
  /** Bandwidth of paths leaving this node, bits/s. */
  egressBps?: number;
  /** Its pod never becomes ready. */
  neverReady?: boolean;
  /** UDP to and from it is dropped (TCP still passes). */
  udpBlocked?: boolean;
  /** Payloads above this many bytes vanish on paths to or from this node (an MTU black hole). */
  blackHoleAbove?: number;
  /** UDP packets above this many bytes (IP length) vanish on paths to or from this node; TCP passes. */
  udpBlackHoleAbove?: number;
  /** Round trip of paths to this node, ms (latency samples; the last one is 3× slower). */
  rttMs?: number;
}

export interface MemoryClusterOptions {
  /** Simulated duration of every exec, ms (0: next macrotask). */
  execMs?: number;
  /** List calls before pods become ready. */
  readyAfterLists?: number;
  /** Count every executed path (tests); off for memory measurements. */
  recordPaths?: boolean;
  /** Called at the start of each exec (e.g. to interrupt a run). */
  onExec?: (pod: string, command: string[]) => void;
  /**
   * Networks (their `lace.io/netcheck-network` label, "n0", "n1", …) whose pods
   * can reach another's: [from, to] lets pods of `from` reach addresses of `to`
   * that their own network does not hold.
   */
  leaks?: [string, string][];
  /** Network k > 0 gives its pods the node's addresses ending in 2+k (else all reuse them). */
  distinctAddresses?: boolean;
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

const DEFAULT_BPS = 9.4e9;

/** A probe pod as an exec sees it: its DaemonSet, node and network (its name is made when needed). */
interface FakePod {
  ds: string;
  node: FakeNode;
  /** Its DaemonSet's network label ("" without --networks). */
  network: string;
}

/** Generates `n` healthy fake nodes with IPv4 and IPv6 addresses. */
export function fakeNodes(n: number): FakeNode[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `node-${String(i).padStart(4, "0")}`,
    ipv4: `10.${(i >> 8) & 255}.${i & 255}.2`,
    ipv6: `fd00::${i.toString(16)}:2`,
  }));
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
  #busyLeft = new Map<string, number>();

  constructor(nodes: FakeNode[], readonly options: MemoryClusterOptions = {}) {
    super();
    this.nodes = nodes;
    // Only the nodes that answer busy: a map of every node is O(N) of the figure's memory.
    for (const n of nodes) if (n.busyTimes) this.#busyLeft.set(n.name, n.busyTimes);
    const seen = new Set<string>();
    for (const n of nodes) {
      for (const a of [n.ipv4, n.ipv6]) {
        if (a && seen.has(a)) this.#duplicates = true;
        else if (a) seen.add(a);
      }
    }
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

  #podName(ds: string, node: FakeNode): string {
    return `${ds}-${node.name}`;
  }

  /**
   * Pods are not stored: an exec finds its source and target node by the
   * number in a fakeNodes() name or address (other nodes through a map of
   * them, made when first needed) and makes no object per pod: an index of
   * every pod, or pods made per exec, would raise the bench's peak RSS at
   * thousands of nodes (bench/netcheck_worker.ts measures netcheck, not this
   * stand-in).
   */
  #nodeByName: Map<string, FakeNode> | undefined;
  #nodeByAddress: Map<string, FakeNode> | undefined;
  /** Some address is held by two nodes (the earlier wins, so the map decides). */
  #duplicates = false;

  #index(): void {
    this.#nodeByName = new Map();
    this.#nodeByAddress = new Map();
    for (const node of this.nodes) {
      this.#nodeByName.set(node.name, node);
      // Earlier nodes win a duplicated address.
      for (const a of [node.ipv4, node.ipv6]) {
        if (a && !this.#nodeByAddress.has(a)) this.#nodeByAddress.set(a, node);
      }
    }
  }

  /** The network label of DaemonSet `ds` and how its pods' addresses are shifted (0: not). */
  #networkOf(manifest: Record<string, unknown>): { network: string; shift: number } {
    const labels = (manifest.metadata as { labels?: Record<string, string> }).labels ?? {};
    const network = labels[NETWORK_LABEL] ?? "";
    const k = Number(network.slice(1)) || 0;
    return { network, shift: this.options.distinctAddresses && k > 0 ? k : 0 };
  }

  /** The addresses of DaemonSet `manifest`'s pod on `node`. */
  #addressesOf(manifest: Record<string, unknown>, node: FakeNode): string[] {
    const { shift } = this.#networkOf(manifest);
    return [node.ipv4, node.ipv6].filter((a): a is string => !!a)
      .map((a) => shift ? a.replace(/([.:])2$/, `$1${2 + shift}`) : a);
  }

  #pod(name: string): FakePod | undefined {
    for (const [ds, manifest] of this.daemonSets) {
      if (name.charCodeAt(ds.length) !== 45 || !name.startsWith(ds)) continue;
      const node = this.#nodeNamed(name, ds.length + 1);
      if (node) return { ds, node, network: this.#networkOf(manifest).network };
    }
    return undefined;
  }

  /** The node holding `address` (its own, not a pod's shifted one), if any. */
  nodeAt(address: string): FakeNode | undefined {
    // fakeNodes() numbers its nodes in their addresses: 10.<i/256>.<i%256>.2 and fd00::<i>:2.
    let i = -1;
    if (address.startsWith("10.") && address.endsWith(".2")) {
      const dot = address.indexOf(".", 3);
      i = Number(address.slice(3, dot)) * 256 + Number(address.slice(dot + 1, -2));
    } else if (address.startsWith("fd00::") && address.endsWith(":2")) {
      i = parseInt(address.slice(6, -2), 16);
    }
    const node = this.nodes[i];
    if (node && (node.ipv4 === address || node.ipv6 === address) && !this.#duplicates) return node;
    if (!this.#nodeByAddress) this.#index();
    return this.#nodeByAddress!.get(address);
  }

  /** The node named by `name` from `offset` on; fakeNodes() names are numbered. */
  #nodeNamed(name: string, offset: number): FakeNode | undefined {
    if (name.startsWith("node-", offset)) {
      const node = this.nodes[Number(name.slice(offset + 5))];
      if (node && node.name.length === name.length - offset && name.endsWith(node.name)) {
        return node;
      }
    }
    if (!this.#nodeByName) this.#index();
    return this.#nodeByName!.get(name.slice(offset));
  }

  /** The pod of a DaemonSet labelled `network` that holds `address`, if any. */
  #podAt(network: string, address: string): FakePod | undefined {
    for (const [ds, manifest] of this.daemonSets) {
      const { network: own, shift } = this.#networkOf(manifest);
      if (own !== network) continue;
      if (!shift) {
        const node = this.nodeAt(address);
        if (node) return { ds, node, network };
        continue;
      }
      // A shifted pod address ends in 2+k where its node's ends in 2 (others are kept as they are).
      for (const base of [address.replace(new RegExp(`([.:])${2 + shift}$`), "$12"), address]) {
        const node = this.nodeAt(base);
        if (node && this.#addressesOf(manifest, node).includes(address)) {
          return { ds, node, network };
        }
      }
    }
    return undefined;
  }

  /** Who answers `address` for a pod of `network`: its own network's pod, else through a leak. */
  #route(network: string, address: string): FakePod | undefined {
    const own = this.#podAt(network, address);
    if (own) return own;
    for (const [from, to] of this.options.leaks ?? []) {
      if (from !== network) continue;
      const leaked = this.#podAt(to, address);
      if (leaked) return leaked;
    }
    return undefined;
  }

  /** Whether the DaemonSet `manifest` in `namespace` matches "k=v,k=v". */
  #selects(manifest: Record<string, unknown>, namespace: string, selector: string): boolean {
    const meta = manifest.metadata as { namespace?: string; labels?: Record<string, string> };
    if ((meta.namespace ?? namespace) !== namespace) return false;
    const labels = meta.labels ?? {};
    return selector.split(",").filter(Boolean).every((term) => {
      const eq = term.indexOf("=");
      return labels[term.slice(0, eq)] === term.slice(eq + 1);
    });
  }

  listPods(namespace: string, labelSelector: string): Promise<ProbePod[]> {
    this.#lists++;
    const started = this.#lists > (this.options.readyAfterLists ?? 0);
    const pods: ProbePod[] = [];
    for (const [ds, manifest] of this.daemonSets) {
      if (!this.#selects(manifest, namespace, labelSelector)) continue;
      for (const node of this.nodes) {
        const ready = started && !node.cordoned && !node.waitingReason && !node.neverReady;
        const name = this.#podName(ds, node);
        pods.push({
          name,
          nodeName: node.name,
          phase: ready ? "Running" : "Pending",
          ready,
          podIPs: ready ? this.#addressesOf(manifest, node) : [],
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
    const source = this.#pod(pod);
    const from = source?.node;
    const isBandwidth = container === "bandwidth";
    const isCurl = command[0] === "curl";
    const answering = this.#route(
      source?.network ?? "",
      isBandwidth
        ? command[command.indexOf("-c") + 1]
        : isCurl
        ? command.at(-1)!.replace(/^http:\/\/\[?(.*?)\]?:\d+\/.*$/, "$1")
        : command.at(-1)!.replace(/^\[?(.*?)\]?:\d+$/, "$1"),
    );
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
        const answeredBy = answering ? this.#podName(answering.ds, answering.node) : "";
        return curlAnswer(from, target, answeredBy, command);
      }
      if (command.includes("--protocol=udp") && (from.udpBlocked || target?.udpBlocked)) {
        return { exitCode: 1, stdout: "", stderr: "TIMEOUT\n" };
      }
      if (isBandwidth && command.includes("-u")) return udpDatagramsAnswer(from, target, command);
      if (isBandwidth && command.includes("-n")) return transferAnswer(from, target);
      return isBandwidth ? this.#iperf(from, target) : connectAnswer(from, target);
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

  #iperf(from: FakeNode, to: FakeNode | undefined): ExecResult {
    if (!to || from.unreachable || to.unreachable) return unreachableIperf();
    const busy = this.#busyLeft.get(to.name) ?? 0;
    if (busy > 0) {
      this.#busyLeft.set(to.name, busy - 1);
      return {
        exitCode: 1,
        stdout: JSON.stringify({
          start: {},
          end: {},
          error: "error - the server is busy running a test. try again later",
        }),
        stderr: "",
      };
    }
    const bps = from.egressBps ?? DEFAULT_BPS;
    const json = JSON.stringify({
      start: {},
      intervals: [],
      end: { sum_received: { bits_per_second: bps } },
    });
    return this.options.iperfOutput?.(json, from.name, to.name) ??
      { exitCode: 0, stdout: json + "\n", stderr: "" };
  }
}
