/**
 * A tiny container runtime's CNI side, the way libcni drives a conflist:
 * ADD runs the plugins in order, each getting the previous result as
 * `prevResult`; DEL runs them in reverse and CHECK in order, both with the
 * cached result of the ADD. Plugins are real executables (the reference
 * plugins, `lace`) run with the CNI_* variables and the config on stdin,
 * inside the node's network namespace; a step can also be a function, which
 * stands in for the work of a plugin this machine does not have.
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { isExecutable } from "./executable.ts";

/**
 * Why the tests that chain the real `ptp` reference plugin cannot run here, or undefined when
 * /usr/lib/cni/ptp is there (scripts/setup.sh installs it).
 */
export const PTP_MISSING = isExecutable("/usr/lib/cni/ptp")
  ? undefined
  : "no /usr/lib/cni/ptp: install the CNI reference plugins (containernetworking-plugins, scripts/setup.sh)";

export interface PluginRun {
  type: string;
  code: number;
  stdout: string;
  stderr: string;
  /** Wall time of the plugin process, in ms. */
  ms: number;
}

/** One plugin of the chain: an executable (default `<cniPath>/<type>`) or an in-process step. */
export interface ChainPlugin {
  conf: Record<string, unknown> & { type: string };
  cmd?: string[];
  step?: (command: string, prevResult: Record<string, unknown> | undefined) => Promise<void>;
}

export interface AttachmentParams {
  containerId: string;
  /** Path of the pod's network namespace (CNI_NETNS). */
  netns: string;
  ifname: string;
  /** CNI_ARGS pairs. */
  args: Record<string, string>;
}

export interface ChainOutcome {
  ok: boolean;
  result?: Record<string, unknown>;
  /** The error result of the plugin that failed. */
  error?: { code: number; msg: string };
  runs: PluginRun[];
}

/** The command that runs this checkout's `lace` as a plugin. */
export function laceCommand(): string[] {
  const main = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "main.ts");
  return [Deno.execPath(), "run", "-A", "--quiet", main];
}

/** Runs one plugin process; `netns` runs it inside that network namespace. */
export async function execPlugin(
  cmd: string[],
  env: Record<string, string>,
  stdin: string,
  netns?: string,
): Promise<Omit<PluginRun, "type">> {
  const argv = netns ? ["ip", "netns", "exec", netns, ...cmd] : cmd;
  const started = performance.now();
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    env,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const out = await child.output();
  const ms = performance.now() - started;
  const text = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: out.code, stdout: text(out.stdout), stderr: text(out.stderr), ms };
}

export class CniChain {
  readonly #cache = new Map<string, Record<string, unknown>>();

  constructor(
    readonly opts: {
      name: string;
      cniVersion: string;
      plugins: ChainPlugin[];
      /** Namespace the runtime (and so every plugin) runs in. */
      runtimeNetns?: string;
      cniPath?: string;
    },
  ) {}

  #env(command: string, a: AttachmentParams): Record<string, string> {
    return {
      CNI_COMMAND: command,
      CNI_CONTAINERID: a.containerId,
      CNI_NETNS: a.netns,
      CNI_IFNAME: a.ifname,
      CNI_ARGS: Object.entries(a.args).map(([k, v]) => `${k}=${v}`).join(";"),
      CNI_PATH: this.opts.cniPath ?? "/usr/lib/cni",
    };
  }

  async #run(
    command: string,
    a: AttachmentParams,
    order: ChainPlugin[],
    prevFor: (previous: Record<string, unknown> | undefined) => Record<string, unknown> | undefined,
  ): Promise<ChainOutcome> {
    const runs: PluginRun[] = [];
    let previous: Record<string, unknown> | undefined;
    for (const plugin of order) {
      const prevResult = prevFor(previous);
      if (plugin.step) {
        await plugin.step(command, prevResult);
        continue;
      }
      const conf = { ...plugin.conf, cniVersion: this.opts.cniVersion, name: this.opts.name };
      if (prevResult) Object.assign(conf, { prevResult });
      const cmd = plugin.cmd ?? [`${this.opts.cniPath ?? "/usr/lib/cni"}/${plugin.conf.type}`];
      const run = await execPlugin(
        cmd,
        this.#env(command, a),
        JSON.stringify(conf),
        this.opts.runtimeNetns,
      );
      runs.push({ type: plugin.conf.type, ...run });
      if (run.code !== 0) {
        let error = { code: -1, msg: `${plugin.conf.type} exited ${run.code}: ${run.stderr}` };
        try {
          error = JSON.parse(run.stdout);
        } catch { /* not a CNI error result */ }
        return { ok: false, error, runs };
      }
      if (command === "ADD") previous = JSON.parse(run.stdout);
    }
    return { ok: true, result: previous, runs };
  }

  /** ADD through the whole chain; caches the final result for DEL and CHECK. */
  async add(a: AttachmentParams): Promise<ChainOutcome> {
    const out = await this.#run("ADD", a, this.opts.plugins, (p) => p);
    if (out.ok && out.result) this.#cache.set(`${a.containerId}/${a.ifname}`, out.result);
    return out;
  }

  async check(a: AttachmentParams): Promise<ChainOutcome> {
    const cached = this.#cache.get(`${a.containerId}/${a.ifname}`);
    return await this.#run("CHECK", a, this.opts.plugins, () => cached);
  }

  async del(a: AttachmentParams): Promise<ChainOutcome> {
    const cached = this.#cache.get(`${a.containerId}/${a.ifname}`);
    const out = await this.#run("DEL", a, [...this.opts.plugins].reverse(), () => cached);
    if (out.ok) this.#cache.delete(`${a.containerId}/${a.ifname}`);
    return out;
  }
}
