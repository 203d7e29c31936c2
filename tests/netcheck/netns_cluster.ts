/**
 * A simulated cluster for privileged tests: every node is its own network
 * namespace with a pod address (IPv4 and IPv6) on a bridge that lives in a
 * dedicated hub namespace (never the machine's own). Creating the DaemonSet
 * starts each node's "pod": the agnhost stand-in (netexec on 1199) and the
 * real `iperf3 -s`; exec runs the command inside the pod's namespace, with
 * `/agnhost` mapped to the stand-in. Faults on demand: unreachable node (all
 * input dropped), ImagePullBackOff, cordoned node, busy iperf3 server, slow
 * egress. Requires root; always `close()` it (or `await using`).
 *
 * With `networks: M`, every node also has a pod namespace in networks 1…M−1,
 * each network its own hub bridge, all in the same address range (network k
 * uses hosts 10+i+40k of 10.99.0.0/24): a DaemonSet labelled
 * `lace.io/netcheck-network=n<k>` runs in network k. The networks are
 * isolated until `joinNetworks()` links two hubs' bridges (broken isolation).
 * The namespaces, addresses, faults and links are made by netns_topology.ts;
 * this file runs the pods and answers as a NetcheckCluster.
 */
import type {
  ExecOptions,
  ExecResult,
  NetcheckCluster,
  ProbePod,
} from "../../lib/netcheck/cluster/netcheck_cluster.ts";
import { MemoryLeases } from "./memory_leases.ts";
import { waitFor } from "../helpers/wait.ts";
import { addHub, addNode, addPlainNode, linkHubs, run, type SimNode } from "./netns_topology.ts";
import { NETWORK_LABEL } from "../../lib/netcheck/cluster/manifest.ts";
import { ExecOutput, tooLongError } from "../../lib/netcheck/cluster/exec_output.ts";

export type { SimNode };

interface NodeState extends SimNode {
  netns: string;
  ipv4: string;
  ipv6: string;
  servers: Deno.ChildProcess[];
  busyPending: boolean;
}

const AGNHOST = new URL("./agnhost.ts", import.meta.url).pathname;

export class NetnsCluster extends MemoryLeases implements NetcheckCluster, AsyncDisposable {
  readonly nodes: NodeState[] = [];
  /** Each network's pod per node; networks[0] is `nodes`. */
  readonly networks: NodeState[][] = [this.nodes];
  #dsNetwork = new Map<string, number>();
  #joins = 0;
  readonly daemonSets = new Set<string>();
  readonly namespaces = new Set<string>();
  readonly hub: string;
  #closed = false;
  #hubs: string[] = [];
  #helpers: Deno.ChildProcess[] = [];

  private constructor(readonly prefix: string) {
    super();
    this.hub = `${prefix}-hub`;
  }

  /** Builds the hub and one namespace per node. */
  static async create(
    specs: SimNode[],
    options: { networks?: number } = {},
  ): Promise<NetnsCluster> {
    const prefix = `lnc${crypto.randomUUID().slice(0, 6)}`;
    const c = new NetnsCluster(prefix);
    try {
      await addHub(c.hub);
      for (const [i, spec] of specs.entries()) {
        const netns = `${prefix}-n${i}`;
        const node: NodeState = {
          ...spec,
          netns,
          ipv4: `10.99.0.${10 + i}`,
          ipv6: `fd00:99::${(10 + i).toString(16)}`,
          servers: [],
          busyPending: !!spec.busyOnce,
        };
        c.nodes.push(node);
        await addNode(c.hub, i, netns, node, spec);
      }
      for (let k = 1; k < (options.networks ?? 1); k++) await c.#addNetwork(k);
    } catch (e) {
      await c.close();
      throw e;
    }
    return c;
  }

  /** Network k: its own hub bridge and a pod namespace per node, in the same address range. */
  async #addNetwork(k: number): Promise<void> {
    const hub = `${this.prefix}-hub${k}`;
    this.#hubs.push(hub);
    await addHub(hub);
    // Listed before they are made, so close() deletes what a failed setup left.
    const pods: NodeState[] = [];
    this.networks.push(pods);
    for (const [i, base] of this.nodes.entries()) {
      const netns = `${this.prefix}-n${i}k${k}`;
      const host = 10 + i + 40 * k;
      const pod: NodeState = {
        name: base.name,
        netns,
        ipv4: `10.99.0.${host}`,
        ipv6: `fd00:99::${host.toString(16)}`,
        servers: [],
        busyPending: false,
      };
      pods.push(pod);
      await addPlainNode(hub, i, netns, pod);
    }
  }

  /** The hub namespace of network `k`. */
  #hub(k: number): string {
    return k === 0 ? this.hub : `${this.prefix}-hub${k}`;
  }

  /**
   * Breaks isolation: a veth between the bridges of networks `a` and `b` (what a stray route
   * or link between two networks' bridges does). Returns the undo.
   */
  joinNetworks(a: number, b: number): Promise<() => Promise<void>> {
    return linkHubs(this.#hub(a), this.#hub(b), `j${this.#joins++}`);
  }

  /** Stops every server and deletes every namespace; idempotent. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    for (const pods of this.networks) for (const node of pods) await this.#stopPod(node);
    for (const p of this.#helpers) {
      try {
        p.kill("SIGKILL");
      } catch { /* already gone */ }
      await p.status;
    }
    for (const pods of this.networks) {
      for (const node of pods) await run(["ip", "netns", "del", node.netns], false);
    }
    for (const hub of [this.hub, ...this.#hubs]) await run(["ip", "netns", "del", hub], false);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Server processes currently running (tests check cleanup with it). */
  get runningServers(): number {
    return this.networks.flat().reduce((n, node) => n + node.servers.length, 0);
  }

  async #stopPod(node: NodeState): Promise<void> {
    for (const p of node.servers) {
      try {
        p.kill("SIGKILL");
      } catch { /* already gone */ }
      await p.status;
    }
    node.servers = [];
  }

  #spawn(node: NodeState, args: string[], env: Record<string, string> = {}): Deno.ChildProcess {
    return new Deno.Command("ip", {
      args: ["netns", "exec", node.netns, ...args],
      env,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  }

  ensureNamespace(namespace: string): Promise<void> {
    this.namespaces.add(namespace);
    return Promise.resolve();
  }

  applyDaemonSet(_namespace: string, manifest: Record<string, unknown>): Promise<void> {
    const name = (manifest.metadata as { name: string }).name;
    if (this.daemonSets.has(name)) return Promise.resolve();
    const labels = (manifest.metadata as { labels?: Record<string, string> }).labels ?? {};
    const k = Number((labels[NETWORK_LABEL] ?? "n0").slice(1));
    if (!this.networks[k]) return Promise.reject(new Error(`no simulated network ${k}`));
    this.daemonSets.add(name);
    this.#dsNetwork.set(name, k);
    for (const node of this.networks[k]) {
      if (node.cordoned || node.waitingReason) continue;
      node.servers.push(
        this.#spawn(node, [
          Deno.execPath(),
          "run",
          "--allow-net",
          "--allow-env=HOSTNAME,LACE_SIM_ANSWER_DELAY_MS,LACE_SIM_ENDLESS_HOSTNAME",
          AGNHOST,
          "netexec",
          "--http-port=1199",
          "--udp-port=-1",
        ], {
          HOSTNAME: `${name}-${node.name}`,
          LACE_SIM_ANSWER_DELAY_MS: String(node.answerDelayMs ?? 0),
          LACE_SIM_ENDLESS_HOSTNAME: node.endlessHostname ? "1" : "",
        }),
        this.#spawn(node, ["iperf3", "-s", "-p", "5201"]),
      );
    }
    return Promise.resolve();
  }

  daemonSetDesired(_namespace: string, name: string): Promise<number | null> {
    return Promise.resolve(this.daemonSets.has(name) ? this.nodes.length : null);
  }

  async deleteDaemonSet(_namespace: string, name: string): Promise<void> {
    if (!this.daemonSets.delete(name)) return;
    for (const node of this.networks[this.#dsNetwork.get(name) ?? 0]) await this.#stopPod(node);
  }

  async #listening(node: NodeState): Promise<boolean> {
    const { out } = await run(["ip", "netns", "exec", node.netns, "ss", "-Hltn"], false);
    return /:1199\s/.test(out) && /:5201\s/.test(out);
  }

  async listPods(_namespace: string, labelSelector: string): Promise<ProbePod[]> {
    const pods: ProbePod[] = [];
    const wanted = /lace\.io\/netcheck-network=n(\d+)/.exec(labelSelector);
    for (const ds of this.daemonSets) {
      const k = this.#dsNetwork.get(ds) ?? 0;
      if (k !== Number(wanted?.[1] ?? 0)) continue;
      for (const node of this.networks[k]) {
        const ready = !node.cordoned && !node.waitingReason && await this.#listening(node);
        pods.push({
          name: `${ds}-${node.name}`,
          nodeName: node.name,
          phase: ready ? "Running" : "Pending",
          ready,
          podIPs: ready ? [node.ipv4, node.ipv6] : [],
          unschedulable: !!node.cordoned,
          containerReasons: node.waitingReason ? { connect: node.waitingReason } : {},
        });
      }
    }
    return pods;
  }

  #nodeOfPod(pod: string): NodeState | undefined {
    for (const ds of this.daemonSets) {
      const pods = this.networks[this.#dsNetwork.get(ds) ?? 0];
      const node = pods.find((n) => pod === `${ds}-${n.name}`);
      if (node) return node;
    }
    return undefined;
  }

  /** Occupies `node`'s iperf3 server with a short test from its own namespace. */
  async #makeBusy(node: NodeState): Promise<void> {
    node.busyPending = false;
    const blocker = this.#spawn(node, ["iperf3", "-c", node.ipv4, "-p", "5201", "-t", "2"]);
    this.#helpers.push(blocker);
    await waitFor(async () => {
      const { out } = await run(
        [
          "ip",
          "netns",
          "exec",
          node.netns,
          "ss",
          "-Htn",
          "state",
          "established",
          "( sport = :5201 )",
        ],
        false,
      );
      return out.trim() !== "";
    }, { timeout: 5000, message: `a test on ${node.name}'s iperf3 server` });
  }

  async exec(
    _namespace: string,
    pod: string,
    container: string,
    command: string[],
    options: ExecOptions,
  ): Promise<ExecResult> {
    const node = this.#nodeOfPod(pod);
    if (!node || node.servers.length === 0) {
      return { exitCode: -1, stdout: "", stderr: "", error: `pod "${pod}" is not running` };
    }
    if (container === "bandwidth") {
      const target = this.nodes.find((n) => command.includes(n.ipv4) || command.includes(n.ipv6));
      if (target?.busyPending) await this.#makeBusy(target);
    }
    const argv = command[0] === "/agnhost"
      ? [Deno.execPath(), "run", "--allow-net", AGNHOST, ...command.slice(1)]
      : command;
    const child = new Deno.Command("ip", {
      args: ["netns", "exec", node.netns, ...argv],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    let error: string | undefined;
    const kill = (why: string) => {
      error ??= why;
      try {
        child.kill("SIGKILL");
      } catch { /* exited */ }
    };
    const timer = setTimeout(
      () => kill(`no result within ${options.timeoutMs / 1000}s`),
      options.timeoutMs,
    );
    const onAbort = () => kill("interrupted");
    options.signal?.addEventListener("abort", onAbort, { once: true });
    // As kube_adapter.ts: at most EXEC_OUTPUT_LIMIT bytes kept, the command killed beyond.
    const output = new ExecOutput();
    const read = async (stream: ReadableStream<Uint8Array>, name: "stdout" | "stderr") => {
      for await (const chunk of stream) {
        if (!output.add(name, chunk)) kill(tooLongError(output.limit));
      }
    };
    try {
      const [status] = await Promise.all([
        child.status,
        read(child.stdout, "stdout"),
        read(child.stderr, "stderr"),
      ]);
      return {
        exitCode: error ? -1 : status.code,
        ...output.text(),
        ...(error ? { error } : {}),
        ...(output.tooLong ? { tooLong: true as const } : {}),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }
}
