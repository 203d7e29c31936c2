/**
 * The agent as a real process (`deno run main.ts agent …`) for end-to-end
 * tests, plus the simulated node it runs against: two overlay networks whose
 * pods share one IPv4 and one IPv6 address, a kubelet and an "other" cgroup
 * with a prober in each, a pods directory and a unique pin path. Everything
 * is removed on dispose, even when a test fails half-way.
 */
import { v8FlagsArg } from "../../lib/os/v8_flags.ts";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { SimCgroups } from "../../lib/demo/cgroup.ts";
import { POD_IPV4, POD_IPV6, type SimNode } from "../../lib/demo/netns.ts";
import type { Prober, ProbeResponse } from "../../lib/prober/mod.ts";
import { getFromAgent } from "../../lib/agent_api/client.ts";
import { CleanupStack } from "../../lib/os/cleanup_stack.ts";
import { freeLoopbackPort } from "../../lib/os/process.ts";
import { startSimNode } from "./sim_world.ts";
import { needsRoot, skipIf } from "./skip.ts";
import { waitFor } from "./wait.ts";

export { POD_IPV4, POD_IPV6 };
export const HTTP_PORTS = [8080, 8081, 8082, 8083];
export const TCP_PORTS = [9000, 9001, 9002, 9003];
const MAIN = fileURLToPath(new URL("../../main.ts", import.meta.url));

/**
 * `Deno.test` options for tests that run agent processes on the simulated
 * node: skipped unless root (asked when a test spreads them, so a file that
 * only imports this module registers no skip); the world's processes and
 * sockets outlive a single test step, so the resource and op sanitizers are off.
 */
export const agentTestOptions = {
  get ignore() {
    return skipIf(needsRoot());
  },
  sanitizeResources: false,
  sanitizeOps: false,
};

/** A pod manifest in one of the simulated networks, as the API returns it. */
export function podManifest(opts: {
  name: string;
  networkId: number;
  httpPort: number;
  tcpPort: number;
  nodeName?: string;
  created?: string;
  ips?: string[];
}): Record<string, unknown> {
  const ips = opts.ips ?? [POD_IPV4, POD_IPV6];
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      name: opts.name,
      namespace: "e2e",
      uid: `uid-${opts.name}`,
      creationTimestamp: opts.created ?? "2026-01-01T00:00:00Z",
      annotations: {
        "lace.io/network": `net${opts.networkId}`,
        "lace.io/network-id": `${opts.networkId}`,
      },
    },
    spec: {
      nodeName: opts.nodeName ?? "e2e-node",
      containers: [{
        name: "app",
        ports: [{ name: "http", containerPort: opts.httpPort }],
        livenessProbe: { httpGet: { path: "/healthz", port: "http" } },
        readinessProbe: { tcpSocket: { port: opts.tcpPort } },
      }],
    },
    status: ips.length
      ? { phase: "Running", podIP: ips[0], podIPs: ips.map((ip) => ({ ip })) }
      : { phase: "Pending" },
  };
}

/** Pod "a" in network 1 (http 8080, tcp 9000): the pod most agent tests probe. */
export const POD_A = podManifest({ name: "a", networkId: 1, httpPort: 8080, tcpPort: 9000 });

export interface AgentProcessOptions {
  /** Address of the node listener (metrics and health). */
  metricsAddr: string;
  /** The agent's local socket (its full view, /targets too). */
  agentSocket: string;
  /** Runs the agent inside this named network namespace (its cgroups stay visible). */
  netns?: string;
  /** Adds to the agent's environment (e.g. LACE_BPF_OBJECT for another release's object). */
  env?: Record<string, string>;
  /** A command the agent runs under (e.g. setpriv with the chart's capabilities). */
  wrap?: string[];
}

export class AgentProcess {
  readonly #child: Deno.ChildProcess;
  readonly logs: string[] = [];
  readonly #drained: Promise<void>;
  readonly metricsAddr: string;
  readonly agentSocket: string;

  constructor(args: string[], opts: AgentProcessOptions) {
    this.metricsAddr = opts.metricsAddr;
    this.agentSocket = opts.agentSocket;
    const agent = [
      Deno.execPath(),
      "run",
      "-A",
      v8FlagsArg(),
      MAIN,
      "agent",
      ...args,
      `--metrics-addr=${opts.metricsAddr}`,
      `--agent-socket=${opts.agentSocket}`,
      "--log-format=json",
    ];
    // nsenter, not `ip netns exec`: that remounts /sys, and the agent needs the cgroup mounts.
    const wrapped = [...opts.wrap ?? [], ...agent];
    const argv = opts.netns ? ["nsenter", `--net=/run/netns/${opts.netns}`, ...wrapped] : wrapped;
    const child = new Deno.Command(argv[0], {
      args: argv.slice(1),
      stdin: "null",
      stdout: "null",
      stderr: "piped",
      env: { NO_COLOR: "1", ...opts.env },
    }).spawn();
    this.#child = child;
    this.#drained = (async () => {
      const decoder = new TextDecoderStream();
      let buf = "";
      for await (const chunk of child.stderr.pipeThrough(decoder)) {
        buf += chunk;
        const parts = buf.split("\n");
        buf = parts.pop()!;
        this.logs.push(...parts);
      }
      if (buf) this.logs.push(buf);
    })();
  }

  get pid(): number {
    return this.#child.pid;
  }

  /** GETs `path` from the node listener (metrics and health only). */
  async get(path: string): Promise<{ status: number; body: string }> {
    const res = await fetch(`http://${this.metricsAddr}${path}`, {
      signal: AbortSignal.timeout(2000),
    });
    return { status: res.status, body: await res.text() };
  }

  /** GETs `path` from the agent's local socket (everything, /targets too). */
  local(path: string): Promise<{ status: number; body: string }> {
    return getFromAgent(this.agentSocket, path, 2000);
  }

  /** Waits for /readyz on the local socket to answer 200. */
  async ready(deadlineMs = 20_000): Promise<void> {
    await waitFor(async () => {
      const { status, body } = await this.local("/readyz");
      // Not ready says why (e.g. a kubelet cgroup mismatch): keep it for the timeout error.
      if (status !== 200) throw new Error(`/readyz answered ${status}: ${body.trim()}`);
      return true;
    }, {
      timeout: deadlineMs,
      message: "the agent to be ready",
    })
      .catch((e) => {
        throw new Error(`${e.message}\nagent log:\n${this.logs.join("\n")}`);
      });
  }

  /** The value of one metric sample, e.g. `lace_probe_targets{family="ipv4",network_id="1"}`. */
  async metric(sample: string): Promise<number | undefined> {
    const { body } = await this.local("/metrics");
    const line = body.split("\n").find((l) => l.startsWith(sample + " "));
    return line === undefined ? undefined : Number(line.slice(sample.length + 1));
  }

  /** Freezes the agent (SIGSTOP): the datapath runs on, nothing reads its reports. */
  freeze(): void {
    this.#child.kill("SIGSTOP");
  }

  /** Lets a frozen agent run again (SIGCONT). */
  thaw(): void {
    this.#child.kill("SIGCONT");
  }

  /** Sends a signal and waits for the process to end. */
  async stop(signal: Deno.Signal = "SIGTERM"): Promise<Deno.CommandStatus> {
    try {
      this.#child.kill(signal);
    } catch {
      // Already gone.
    }
    const status = await this.#child.status;
    await this.#drained;
    return status;
  }
}

/** A loopback host:port nobody listens on now (for the agent's metrics or health listener). */
export function freeLoopbackAddr(): string {
  return `127.0.0.1:${freeLoopbackPort()}`;
}

export class AgentWorld implements AsyncDisposable {
  node!: SimNode;
  cgroups!: SimCgroups;
  kubelet!: Prober;
  other!: Prober;
  podsDir!: string;
  /** Where this world's agents put their local sockets. */
  runDir!: string;
  pinPath!: string;
  readonly agents: AgentProcess[] = [];
  /**
   * The simulated node gives the pods of both networks the same addresses, to
   * show that the port alone decides the network a probe is delivered into;
   * the agent's default (--address-sharing=exclusive) allows one network per
   * address. So its agents run with `shared` unless a test sets `"default"`
   * here (to run the agent with no such flag) or passes the flag itself.
   */
  addressSharing: "shared" | "default" = "shared";
  readonly #cleanups = new CleanupStack("AgentWorld");

  static async create(): Promise<AgentWorld> {
    const w = new AgentWorld();
    try {
      Object.assign(
        w,
        await startSimNode(w.#cleanups, { httpPorts: HTTP_PORTS, tcpPorts: TCP_PORTS }),
      );
      w.podsDir = await Deno.makeTempDir({ prefix: "lace-e2e-pods-" });
      w.#cleanups.push(() => Deno.remove(w.podsDir, { recursive: true }));
      w.runDir = await Deno.makeTempDir({ prefix: "lace-e2e-run-" });
      w.#cleanups.push(() => Deno.remove(w.runDir, { recursive: true }));
      return w;
    } catch (e) {
      await w.dispose();
      throw e;
    }
  }

  /**
   * Starts an agent on this world's pin path and kubelet cgroup, with its own
   * local socket. `opts.env` adds to its environment (e.g. LACE_BPF_OBJECT for
   * another release's object); `opts.netns` runs it in that network namespace,
   * with its node listener on `opts.metricsAddr` there.
   */
  startAgent(
    extra: string[],
    kubeletCgroup = this.cgroups.kubelet,
    opts: { env?: Record<string, string>; netns?: string; metricsAddr?: string; wrap?: string[] } =
      {},
  ): AgentProcess {
    const agent = new AgentProcess([
      "--node-name=e2e-node",
      `--pin-path=${this.pinPath}`,
      `--kubelet-cgroup=${kubeletCgroup}`,
      "--cni-socket=",
      "--debounce=5ms",
      ...(this.addressSharing === "shared" && !extra.some((a) => a.startsWith("--address-sharing"))
        ? ["--address-sharing=shared"]
        : []),
      ...extra,
    ], {
      metricsAddr: opts.metricsAddr ?? freeLoopbackAddr(),
      agentSocket: `${this.runDir}/agent-${this.agents.length}.sock`,
      netns: opts.netns,
      env: opts.env,
      wrap: opts.wrap,
    });
    this.agents.push(agent);
    return agent;
  }

  async writePod(manifest: Record<string, unknown>): Promise<void> {
    const name = (manifest.metadata as { name: string }).name;
    const tmp = join(this.podsDir, `.${name}.tmp`);
    await Deno.writeTextFile(tmp, JSON.stringify(manifest));
    await Deno.rename(tmp, join(this.podsDir, `${name}.json`));
  }

  async removePod(name: string): Promise<void> {
    await Deno.remove(join(this.podsDir, `${name}.json`));
  }

  /** The sim pod name ("pod-net<id>") that answers in network `id`. */
  podIn(networkId: number): string {
    return this.node.network(networkId).pod;
  }

  /** Probes from the kubelet cgroup (HTTP when `http` is given). */
  probe(
    host: string,
    port: number,
    http?: string,
    from: "kubelet" | "other" = "kubelet",
  ): Promise<ProbeResponse> {
    return (from === "kubelet" ? this.kubelet : this.other).probe({
      host,
      port,
      timeoutMs: 1000,
      ...(http ? { http } : {}),
    });
  }

  async dispose(): Promise<void> {
    for (const agent of this.agents) await agent.stop("SIGKILL");
    // Cleanup failures are ignored: the rest is removed regardless.
    await this.#cleanups.run().catch(() => {});
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}
