/**
 * A simulated pod's servers: HTTP (any path answers 200 with the pod's name)
 * and raw TCP (writes the pod's name, then closes), on the given addresses
 * and ports. Run inside a pod namespace; prints "ready" once listening.
 *
 *   pod_server.ts --name pod-a --addr 10.244.1.10 --addr fd00:244::10 --http 8080 --tcp 9000
 */
import { parseArgs } from "node:util";
import { lines } from "../os/process.ts";
import { moduleCommand } from "../os/self_command.ts";

/** Serves until the process is killed. */
export async function runPodServer(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      name: { type: "string" },
      addr: { type: "string", multiple: true, default: [] },
      http: { type: "string", multiple: true, default: [] },
      tcp: { type: "string", multiple: true, default: [] },
    },
  });
  const name = values.name ?? "pod";
  const body = new TextEncoder().encode(name);
  const done: Promise<unknown>[] = [];
  for (const hostname of values.addr) {
    for (const port of values.http.map(Number)) {
      const server = Deno.serve({ hostname, port, onListen() {} }, () => new Response(name));
      done.push(server.finished);
    }
    for (const port of values.tcp.map(Number)) {
      const listener = Deno.listen({ hostname, port });
      done.push((async () => {
        for await (const conn of listener) {
          conn.write(body).catch(() => {}).finally(() => conn.close());
        }
      })());
    }
  }
  await Deno.stdout.write(new TextEncoder().encode("ready\n"));
  await Promise.all(done);
}

export interface PodServerOptions {
  netns: string;
  name: string;
  addresses: string[];
  httpPorts?: number[];
  tcpPorts?: number[];
}

/** A pod server process started in a namespace; dispose kills it. */
export class PodServer implements AsyncDisposable {
  readonly #child: Deno.ChildProcess;

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
  }

  /** Starts the server in `netns` and waits until it listens (or fails). */
  static async start(opts: PodServerOptions): Promise<PodServer> {
    const args = ["--name", opts.name];
    for (const a of opts.addresses) args.push("--addr", a);
    for (const p of opts.httpPorts ?? []) args.push("--http", String(p));
    for (const p of opts.tcpPorts ?? []) args.push("--tcp", String(p));
    const cmd = [
      "ip",
      "netns",
      "exec",
      opts.netns,
      ...moduleCommand(import.meta.url, "__pod-server", args),
    ];
    const child = new Deno.Command(cmd[0], {
      args: cmd.slice(1),
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    const server = new PodServer(child);
    const first = await lines(child.stdout).next();
    if (first.value !== "ready") {
      await server.dispose();
      throw new Error(`Pod server "${opts.name}" in "${opts.netns}" did not start`);
    }
    return server;
  }

  async dispose(): Promise<void> {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
    await this.#child.status;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.dispose();
  }
}

if (import.meta.main) await runPodServer(Deno.args);
