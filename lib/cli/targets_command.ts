/**
 * `lace targets`: what the kubelet's connects are matched against. Asks the
 * running agent first, over its root-only local socket (it knows which pod
 * each target belongs to), and falls back to reading the pinned map when no
 * agent answers.
 */
import { addressesFromAgent } from "../agent_api/client.ts";
import { registeredTargets } from "../agent_api/registered_targets.ts";
import { addressesText, targetsJson, targetsTable } from "../agent_api/text.ts";
import { defaultConfig } from "../config.ts";
import type { CommandSpec } from "../flags/parser.ts";
import { outputFlags, type OutputSettings } from "../flags/output.ts";
import { nodeFlags, parseNodeCommand } from "../flags/agent.ts";

interface TargetsOptions extends OutputSettings {
  pinPath: string;
  agentSocket: string;
}

/** The command's flags, for its help and shell completion. */
export const targetsCommand: CommandSpec<TargetsOptions> = {
  name: "targets",
  summary:
    "List the registered probe targets: family, address, port, network, mark, pod, the probe or lifecycle hook each serves, and the kubelet connects each tagged (hits, last hit).",
  usage: "lace targets [-o text|json] [--pin-path DIR] [--agent-socket PATH]",
  flags: [
    ...outputFlags<TargetsOptions>(),
    nodeFlags.pinPath,
    nodeFlags.agentSocket,
  ],
  defaults: () => {
    const { pinPath, agentSocket } = defaultConfig();
    return { output: "text", pinPath, agentSocket };
  },
};

export async function runTargetsCommand(args: string[]): Promise<number> {
  const options = parseNodeCommand(targetsCommand, args);
  if (options === null) return 0;
  const targets = await registeredTargets(options.agentSocket, options.pinPath);
  if (options.output === "json") {
    console.log(targetsJson(targets));
  } else {
    console.log(targets.length ? targetsTable(targets) : "No probe targets registered");
    const addresses = await addressesFromAgent(options.agentSocket);
    const text = addresses ? addressesText(addresses) : "";
    if (text) console.log(`\n${text}`);
  }
  return 0;
}
