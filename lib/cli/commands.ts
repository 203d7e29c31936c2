/**
 * `lace`'s commands (all but the CNI plugin): the table, the usage text and
 * the dispatch. main.ts loads this module only when CNI_COMMAND is unset, so
 * the plugin's start never reads this graph; each command's own modules are
 * imported only when it runs.
 */
type Run = (args: string[]) => Promise<number>;

const commands: Record<string, { summary: string; load: () => Promise<Run>; hidden?: boolean }> = {
  agent: {
    summary: "Run the node agent: watch pods, keep the probe map and kubelet attachment in sync",
    load: async () => (await import("../cli/agent_command.ts")).runAgentCommand,
  },
  targets: {
    summary: "List the registered probe targets (from the running agent, else the pinned map)",
    load: async () => (await import("../cli/targets_command.ts")).runTargetsCommand,
  },
  doctor: {
    summary: "Check this node's Lace setup and explain each problem with its fix",
    load: async () => (await import("../doctor/command.ts")).runDoctor,
  },
  netcheck: {
    summary: "Validate the pod network between every pair of nodes (connectivity, bandwidth)",
    load: async () => (await import("../netcheck/main.ts")).runNetcheck,
  },
  uninstall: {
    summary: "Remove everything Lace pinned and attached on this node, and only that",
    load: async () => (await import("../cli/uninstall_command.ts")).runUninstallCommand,
  },
  version: {
    summary: "Print the version",
    load: async () => (await import("../cli/version_command.ts")).runVersionCommand,
  },
  demo: {
    summary: "Run the whole thing on this machine in network namespaces (root, no cluster)",
    load: async () => (await import("../demo/command.ts")).runDemo,
  },
  "__pod-server": {
    summary: "internal: the demo's pod server",
    hidden: true,
    load: async () => {
      const { runPodServer } = await import("../demo/pod_server.ts");
      return async (args) => (await runPodServer(args), 0);
    },
  },
  "__prober": {
    summary: "internal: the kubelet-like prober",
    hidden: true,
    load: async () => {
      const { runProber } = await import("../prober/mod.ts");
      return async (args) => (await runProber(args), 0);
    },
  },
};

/** The top-level help text: every command that is not hidden, with its summary. */
export function usage(): string {
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

/** Runs the command `args` name with the rest of `args`; returns the exit code. */
export async function runCommand(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    console.log(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === "--version") return runCommand(["version"]);
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    console.error(`lace: unknown command "${name}" (see lace --help)`);
    return 2;
  }
  const run = await command.load();
  return await run(rest);
}
