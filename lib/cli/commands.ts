/**
 * `lace`'s commands (all but the CNI plugin): the table, the usage text and
 * the dispatch. main.ts loads this module only when CNI_COMMAND is unset, so
 * the plugin's start never reads this graph; each command's own modules are
 * imported only when it runs.
 */
import { errorChain } from "../text/error_chain.ts";
import type { CompletionCommand } from "./completion.ts";

type Run = (args: string[]) => Promise<number>;

interface Command {
  summary: string;
  load: () => Promise<Run>;
  /** Its flag table, for shell completion. */
  spec?: () => Promise<CompletionCommand>;
  hidden?: boolean;
}

const commands: Record<string, Command> = {
  agent: {
    summary: "Run the node agent: watch pods, keep the probe map and kubelet attachment in sync",
    load: async () => (await import("../cli/agent_command.ts")).runAgentCommand,
    spec: async () => (await import("../flags/agent.ts")).agentCommand,
  },
  targets: {
    summary: "List the registered probe targets (from the running agent, else the pinned map)",
    load: async () => (await import("../cli/targets_command.ts")).runTargetsCommand,
    spec: async () => (await import("../cli/targets_command.ts")).targetsCommand,
  },
  doctor: {
    summary: "Check this node's Lace setup and explain each problem with its fix",
    load: async () => (await import("../doctor/command.ts")).runDoctor,
    spec: async () => (await import("../doctor/command.ts")).doctorCommand,
  },
  status: {
    summary: "Check that every node's agent is attached and ready (the cluster, through the API)",
    load: async () => (await import("../cli/status_command.ts")).runStatusCommand,
    spec: async () => (await import("../cli/status_command.ts")).statusCommand,
  },
  netcheck: {
    summary: "Validate the pod network between every pair of nodes (connectivity, bandwidth)",
    load: async () => (await import("../netcheck/main.ts")).runNetcheck,
    spec: async () => (await import("../netcheck/flags.ts")).netcheckCommand,
  },
  kubectl: {
    summary: "Run doctor or targets in a node's agent pod through the API (kubectl lace ...)",
    load: async () => (await import("../cli/kubectl_command.ts")).runKubectlCommand,
    spec: async () => (await import("../cli/kubectl_args.ts")).kubectlCommand,
  },
  uninstall: {
    summary: "Remove everything Lace pinned and attached on this node, and only that",
    load: async () => (await import("../cli/uninstall_command.ts")).runUninstallCommand,
    spec: async () => (await import("../cli/uninstall_command.ts")).uninstallCommand,
  },
  version: {
    summary: "Print the version, the commit and the build date",
    load: async () => (await import("../cli/version_command.ts")).runVersionCommand,
    spec: async () => (await import("../cli/version_command.ts")).versionCommand,
  },
  demo: {
    summary: "Run the whole thing on this machine in network namespaces (root, no cluster)",
    load: async () => (await import("../demo/command.ts")).runDemo,
    spec: async () => (await import("../demo/command.ts")).demoCommand,
  },
  completion: {
    summary: "Print the shell completion script of bash, zsh or fish",
    load: async () => {
      const { runCompletionCommand } = await import("./completion_command.ts");
      return (args) => runCompletionCommand(args, completionCommands);
    },
    spec: async () => (await import("./completion_command.ts")).completionCommand,
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

/** Every command that is not hidden with its flag table, in the order help lists them. */
export async function completionCommands(): Promise<CompletionCommand[]> {
  const visible = Object.entries(commands).filter(([, c]) => !c.hidden && c.spec);
  // The table's name is the one a user types (a spec's own name may differ).
  return await Promise.all(
    visible.map(async ([name, c]) => ({ ...await c.spec!(), name, summary: c.summary })),
  );
}

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
    `  ${"help".padEnd(width)}Show a command's help (lace help COMMAND)`,
    "",
    "Flags:",
    "  -h, --help     Show this help",
    "      --version  Print the version (lace version)",
    "",
    "Run 'lace <command> --help' (or 'lace help <command>') for a command's flags. Most flags",
    "can also be set through an environment variable (LACE_...), shown in each command's help.",
  ].join("\n");
}

/** Runs the command `args` name with the rest of `args`; returns the exit code. */
export async function runCommand(args: string[]): Promise<number> {
  const [name, ...rest] = args;
  if (name === undefined) {
    console.error(usage());
    return 2;
  }
  if (name === "--help" || name === "-h") {
    console.log(usage());
    return 0;
  }
  // cobra's `help COMMAND`: the command's own help.
  if (name === "help") return rest.length ? runCommand([rest[0], "--help"]) : runCommand(["-h"]);
  if (name === "--version") return runCommand(["version"]);
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!command) {
    const what = name.startsWith("-") ? "unknown flag" : "unknown command";
    console.error(`lace: ${what} ${JSON.stringify(name)}: run lace --help for the commands`);
    return 2;
  }
  try {
    return await (await command.load())(rest);
  } catch (e) {
    printError(name, e);
    // parser.ts's UsageError, by name: bad input, not a failure of the command.
    return e instanceof Error && e.name === "UsageError" ? 2 : 1;
  }
}

/**
 * Writes `error` in the one format of every command: `lace COMMAND: what failed: what to do`,
 * then its causes, one a line (text/error_chain.ts); a usage error's problems one a line, each
 * with the prefix.
 */
export function printError(command: string, error: unknown): void {
  if (error instanceof Error && error.name === "UsageError") {
    for (const line of error.message.split("\n")) console.error(`lace ${command}: ${line}`);
    return;
  }
  console.error(`lace ${command}: ${errorChain(error)}`);
  if (Deno.env.get("LACE_DEBUG")) console.error((error as Error)?.stack);
}
