/**
 * The one entry point of `lace`: the node agent, its operator commands, and
 * the chained CNI plugin (when the container runtime runs it with
 * CNI_COMMAND set). Commands are imported lazily so that the CNI path and
 * the small commands never load the Kubernetes client.
 */
import { errorChain } from "./lib/cli/error_chain.ts";
import { UsageError } from "./lib/cli/flags.ts";

type Run = (args: string[]) => Promise<number>;

const commands: Record<string, { summary: string; load: () => Promise<Run>; hidden?: boolean }> = {
  agent: {
    summary: "Run the node agent: watch pods, keep the probe map and kubelet attachment in sync",
    load: async () => (await import("./lib/cli/agent_command.ts")).runAgentCommand,
  },
  targets: {
    summary: "List the registered probe targets (from the running agent, else the pinned map)",
    load: async () => (await import("./lib/cli/targets_command.ts")).runTargetsCommand,
  },
  doctor: {
    summary: "Check this node's Lace setup and explain each problem with its fix",
    load: async () => (await import("./lib/doctor/command.ts")).runDoctor,
  },
  netcheck: {
    summary: "Validate the pod network between every pair of nodes (connectivity, bandwidth)",
    load: async () => (await import("./lib/netcheck/main.ts")).runNetcheck,
  },
  uninstall: {
    summary: "Remove everything Lace pinned and attached on this node, and only that",
    load: async () => (await import("./lib/cli/uninstall_command.ts")).runUninstallCommand,
  },
  version: {
    summary: "Print the version",
    load: async () => (await import("./lib/cli/version_command.ts")).runVersionCommand,
  },
  demo: {
    summary: "Run the whole thing on this machine in network namespaces (root, no cluster)",
    load: async () => (await import("./lib/demo/command.ts")).runDemo,
  },
  "__pod-server": {
    summary: "internal: the demo's pod server",
    hidden: true,
    load: async () => {
      const { runPodServer } = await import("./lib/demo/pod_server.ts");
      return async (args) => (await runPodServer(args), 0);
    },
  },
  "__prober": {
    summary: "internal: the kubelet-like prober",
    hidden: true,
    load: async () => {
      const { runProber } = await import("./lib/doctor/prober.ts");
      return async (args) => (await runProber(args), 0);
    },
  },
};

function usage(): string {
  const names = Object.entries(commands).filter(([, c]) => !c.hidden);
  const width = Math.max(...names.map(([n]) => n.length)) + 2;
  return [
    "Usage: lace <command> [flags]",
    "",
    "Lace's node agent: lets the kubelet probe pods that live in isolated overlay networks.",
    "",
    "Commands:",
    ...names.map(([n, c]) => `  ${n.padEnd(width)}${c.summary}`),
    "",
    "Run 'lace <command> --help' for a command's flags. Every flag can also be set",
    "through an environment variable (LACE_...), shown in each command's help.",
  ].join("\n");
}

async function main(args: string[]): Promise<number> {
  if (Deno.env.get("CNI_COMMAND")) {
    const { runCniPlugin } = await import("./lib/cni/plugin.ts");
    return await runCniPlugin();
  }
  const [name, ...rest] = args;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version") return main(["version"]);
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    console.error(`lace: unknown command "${name}" (see lace --help)`);
    return 2;
  }
  const run = await command.load();
  return await run(rest);
}

if (import.meta.main) {
  let code: number;
  try {
    code = await main(Deno.args);
  } catch (e) {
    if (e instanceof UsageError) {
      for (const line of e.message.split("\n")) console.error(`lace: ${line}`);
      code = 2;
    } else {
      console.error(`lace: ${errorChain(e)}`);
      if (Deno.env.get("LACE_DEBUG")) console.error((e as Error)?.stack);
      code = 1;
    }
  }
  Deno.exit(code);
}
