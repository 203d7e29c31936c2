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
 */
import type {
  ExecOptions,
  ExecResult,
  NetcheckCluster,
  ProbePod,
} from "../../lib/netcheck/cluster.ts";
import { MemoryLeases } from "./memory_leases.ts";
import { waitFor } from "../helpers/wait.ts";
import { NETWORK_LABEL } from "../../lib/netcheck/manifest.ts";

export interface SimNode {
  name: string;
  /** Drop everything arriving at the node: its paths time out. */
  unreachable?: boolean;
  /** Its pod waits with this reason (e.g. ImagePullBackOff) and runs nothing. */
  waitingReason?: string;
  /** Its pod stays Pending, unschedulable. */
  cordoned?: boolean;
  /** The first bandwidth test against it finds its iperf3 server busy. */
  busyOnce?: boolean;
  /** Egress rate limit, Mbit/s. */
  slowMbit?: number;
  /**
   * The bridge drops its frames (either way) longer than this many bytes, silently, while the
   * pod's eth0 keeps MTU 1500: no ICMP comes back (an MTU black hole).
   */
  blackHoleMtu?: number;
  /** With blackHoleMtu: only TCP frames to or from this port are dropped (other traffic passes). */
  blackHolePort?: number;
  /** With blackHolePort: the protocol whose frames are dropped (default tcp). */
  blackHoleProto?: "tcp" | "udp";
  /** Its agnhost answers /hostname this much later (a slow request round trip). */
  answerDelayMs?: number;
}

interface NodeState extends SimNode {
  netns: string;
  ipv4: string;
  ipv6: string;
  servers: Deno.ChildProcess[];
  busyPending: boolean;
}

const AGNHOST = new URL("./agnhost.ts", import.meta.url).pathname;

async function run(
  args: string[],
  check = true,
): Promise<{ code: number; out: string; err: string }> {
  const out = await new Deno.Command(args[0], {
    args: args.slice(1),
    stdout: "piped",
    stderr: "piped",
  })
    .output();
  const result = {
    code: out.code,
    out: new TextDecoder().decode(out.stdout),
    err: new TextDecoder().decode(out.stderr),
  };
  if (check && out.code !== 0) {
    throw new Error(`Command failed (${out.code}): ${args.join(" ")}: ${result.err.trim()}`);
  }
  return result;
}

/** Makes the namespace `netns` and plugs its eth0 into the bridge of `hub` as port `v<i>`. */
async function plugIntoHub(hub: string, i: number, netns: string): Promise<void> {
  await run(["ip", "netns", "add", netns]);
  await run([
    "ip",
    "-n",
    hub,
    "link",
    "add",
    `v${i}`,
    "type",
    "veth",
    "peer",
    "name",
    "eth0",
    "netns",
    netns,
  ]);
  await run(["ip", "-n", hub, "link", "set", `v${i}`, "master", "br0", "up"]);
}

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
      await run(["ip", "netns", "add", c.hub]);
      await run(["ip", "-n", c.hub, "link", "add", "br0", "type", "bridge"]);
      await run(["ip", "-n", c.hub, "link", "set", "br0", "up"]);
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
        await plugIntoHub(c.hub, i, netns);
        if (spec.blackHoleMtu) {
          // A bridge filter, not a lower MTU on the veth: GSO packets bypass a veth's MTU check.
          const port = spec.blackHolePort;
          const proto = spec.blackHoleProto ?? "tcp";
          const matches = port ? [`${proto} dport ${port} `, `${proto} sport ${port} `] : [""];
          const rules = matches.flatMap((match) =>
            ["iifname", "oifname"].map((dir) =>
              `add rule bridge sim${i} big ${dir} "v${i}" ${match}` +
              `meta length > ${spec.blackHoleMtu} drop`
            )
          );
          await run([
            "ip",
            "netns",
            "exec",
            c.hub,
            "nft",
            `add table bridge sim${i}; ` +
            `add chain bridge sim${i} big { type filter hook forward priority 0; policy accept; }; ` +
            rules.join("; "),
          ]);
        }
        await run(["ip", "-n", netns, "link", "set", "lo", "up"]);
        await run(["ip", "-n", netns, "link", "set", "eth0", "up"]);
        await run(["ip", "-n", netns, "addr", "add", `${node.ipv4}/24`, "dev", "eth0"]);
        await run(["ip", "-n", netns, "addr", "add", `${node.ipv6}/64`, "dev", "eth0", "nodad"]);
        if (spec.unreachable) {
          await run([
            "ip",
            "netns",
            "exec",
            netns,
            "nft",
            "add table inet sim; add chain inet sim in { type filter hook input priority 0; policy drop; }; " +
            "add rule inet sim in iif lo accept",
          ]);
        }
        if (spec.slowMbit) {
          await run([
            "ip",
            "netns",
            "exec",
            netns,
            "tc",
            "qdisc",
            "add",
            "dev",
            "eth0",
            "root",
            "tbf",
            "rate",
            `${spec.slowMbit}mbit`,
            "burst",
            "32kbit",
            "latency",
            "100ms",
          ]);
        }
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
    await run(["ip", "netns", "add", hub]);
    this.#hubs.push(hub);
    await run(["ip", "-n", hub, "link", "add", "br0", "type", "bridge"]);
    await run(["ip", "-n", hub, "link", "set", "br0", "up"]);
    const pods: NodeState[] = [];
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
      await plugIntoHub(hub, i, netns);
      await run(["ip", "-n", netns, "link", "set", "lo", "up"]);
      await run(["ip", "-n", netns, "link", "set", "eth0", "up"]);
      await run(["ip", "-n", netns, "addr", "add", `${pod.ipv4}/24`, "dev", "eth0"]);
      await run(["ip", "-n", netns, "addr", "add", `${pod.ipv6}/64`, "dev", "eth0", "nodad"]);
    }
    this.networks.push(pods);
  }

  /** The hub namespace of network `k`. */
  #hub(k: number): string {
    return k === 0 ? this.hub : `${this.prefix}-hub${k}`;
  }

  /**
   * Breaks isolation: a veth between the bridges of networks `a` and `b` (what a stray route
   * or link between two networks' bridges does). Returns the undo.
   */
  async joinNetworks(a: number, b: number): Promise<() => Promise<void>> {
    const name = `j${this.#joins++}`;
    await run([
      "ip",
      "-n",
      this.#hub(a),
      "link",
      "add",
      `${name}a`,
      "type",
      "veth",
      "peer",
      "name",
      `${name}b`,
      "netns",
      this.#hub(b),
    ]);
    await run(["ip", "-n", this.#hub(a), "link", "set", `${name}a`, "master", "br0", "up"]);
    await run(["ip", "-n", this.#hub(b), "link", "set", `${name}b`, "master", "br0", "up"]);
    // A new bridge port forwards only once its carrier is up (about a second here).
    for (const [hub, dev] of [[this.#hub(a), `${name}a`], [this.#hub(b), `${name}b`]]) {
      await waitFor(async () => {
        const { out } = await run(["bridge", "-n", hub, "link", "show", "dev", dev], false);
        return /state forwarding/.test(out) && !/NO-CARRIER/.test(out);
      }, { timeout: 10_000, message: `bridge port ${dev} forwarding` });
    }
    return () => run(["ip", "-n", this.#hub(a), "link", "del", `${name}a`], false).then(() => {});
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
          "--allow-env=HOSTNAME,LACE_SIM_ANSWER_DELAY_MS",
          AGNHOST,
          "netexec",
          "--http-port=1199",
          "--udp-port=-1",
        ], {
          HOSTNAME: `${name}-${node.name}`,
          LACE_SIM_ANSWER_DELAY_MS: String(node.answerDelayMs ?? 0),
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
    try {
      const out = await child.output();
      return {
        exitCode: error ? -1 : out.code,
        stdout: new TextDecoder().decode(out.stdout),
        stderr: new TextDecoder().decode(out.stderr),
        ...(error ? { error } : {}),
      };
    } finally {
      clearTimeout(timer);
      options.signal?.removeEventListener("abort", onAbort);
    }
  }
}
