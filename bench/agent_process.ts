/**
 * `lace agent` as a child process (`deno run -A main.ts agent …`), the way a
 * node runs it: started, waited for until /readyz answers 200 (attached and
 * first full pod list applied), stopped with SIGTERM.
 */
import { fileURLToPath } from "node:url";
import { NODE_NAME } from "./pods.ts";
import { sleep } from "./system.ts";
import { v8FlagsArg } from "../lib/os/v8_flags.ts";
import { freeLoopbackPort } from "../lib/os/process.ts";

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));

export interface AgentProcessOptions {
  pinPath: string;
  kubeletCgroup: string;
  podsDir?: string;
  /** Use the Kubernetes API through this kubeconfig. */
  kubeconfig?: string;
}

/** The command line that runs main.ts with `args` under the same deno, with Lace's V8 flags. */
export function mainCommand(args: string[]): string[] {
  return [Deno.execPath(), "run", "--allow-all", v8FlagsArg(), MAIN, ...args];
}

export class AgentProcess {
  readonly child: Deno.ChildProcess;
  readonly metricsAddr: string;
  /** The loopback health listener (/healthz, /readyz), as the chart's probes use it. */
  readonly healthAddr: string;
  /** The agent's local socket (its view, /targets too), in a directory of its own. */
  readonly agentSocket: string;
  /** performance.now() just before the spawn. */
  readonly spawnedAt: number;
  #stopped: Promise<void> | undefined;

  private constructor(
    child: Deno.ChildProcess,
    metricsAddr: string,
    healthAddr: string,
    agentSocket: string,
    spawnedAt: number,
  ) {
    this.child = child;
    this.metricsAddr = metricsAddr;
    this.healthAddr = healthAddr;
    this.agentSocket = agentSocket;
    this.spawnedAt = spawnedAt;
  }

  get pid(): number {
    return this.child.pid;
  }

  static start(opts: AgentProcessOptions): AgentProcess {
    const metricsAddr = `127.0.0.1:${freeLoopbackPort()}`;
    // Readiness is polled where the kubelet polls it: the node listener limits the requests of
    // one address (10 a second), which would blur the time to ready.
    const healthAddr = `127.0.0.1:${freeLoopbackPort()}`;
    const agentSocket = `${Deno.makeTempDirSync({ prefix: "lace-bench-run-" })}/agent.sock`;
    const args = [
      "agent",
      "--node-name",
      NODE_NAME,
      "--pin-path",
      opts.pinPath,
      "--kubelet-cgroup",
      opts.kubeletCgroup,
      "--metrics-addr",
      metricsAddr,
      "--agent-socket",
      agentSocket,
      "--cni-socket",
      "",
      "--log-level",
      "warning",
      ...(opts.podsDir ? ["--pods-dir", opts.podsDir] : []),
      "--health-addr",
      healthAddr,
      ...(opts.kubeconfig ? ["--kube-api", "--kubeconfig", opts.kubeconfig] : ["--no-kube-api"]),
    ];
    const cmd = mainCommand(args);
    const spawnedAt = performance.now();
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: "null",
      stdout: "null",
      stderr: "inherit",
    }).spawn();
    return new AgentProcess(child, metricsAddr, healthAddr, agentSocket, spawnedAt);
  }

  /** Waits until /readyz answers 200; returns ms from spawn to the first 200 seen. */
  async waitReady(timeoutMs = 60_000): Promise<number> {
    let exited = false;
    this.child.status.then(() => exited = true);
    const deadline = this.spawnedAt + timeoutMs;
    let last = "no answer";
    while (performance.now() < deadline) {
      if (exited) throw new Error(`The agent exited before it was ready (last /readyz: ${last})`);
      try {
        const res = await fetch(`http://${this.healthAddr}/readyz`);
        last = `${res.status} ${(await res.text()).trim().slice(0, 200)}`;
        if (res.status === 200) return performance.now() - this.spawnedAt;
      } catch {
        // Not listening yet.
      }
      await sleep(2);
    }
    throw new Error(`The agent was not ready after ${timeoutMs} ms (last /readyz: ${last})`);
  }

  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. Safe to call twice. */
  stop(): Promise<void> {
    this.#stopped ??= (async () => {
      try {
        this.child.kill("SIGTERM");
      } catch {
        // Already gone.
      }
      const timer = setTimeout(() => {
        try {
          this.child.kill("SIGKILL");
        } catch { /* gone */ }
      }, 10_000);
      await this.child.status;
      clearTimeout(timer);
      await Deno.remove(this.agentSocket.slice(0, this.agentSocket.lastIndexOf("/")), {
        recursive: true,
      }).catch(() => {});
    })();
    return this.#stopped;
  }
}
