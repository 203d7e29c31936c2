/**
 * `lace agent`: parse flags, set up logging, start the agent, and stop it on
 * SIGTERM/SIGINT leaving everything pinned in place for the next agent.
 */
import { getLogger } from "@logtape/logtape";
import { setupLogging } from "../log.ts";
import { agentConfig, agentFlags } from "./agent_flags.ts";
import { helpText, parseFlags } from "./flags.ts";

const spec = {
  name: "agent",
  summary: [
    "Run the node agent: watch this node's pods (Kubernetes API and/or a directory of manifests),",
    "keep the pinned probe map in sync, keep the connect programs attached to the kubelet's",
    "cgroup, and serve metrics and health. On SIGTERM it stops and leaves the program, links and",
    "map pinned, so probes keep working until the next agent takes over.",
  ].join("\n"),
  usage: "lace agent [flags]",
  flags: agentFlags,
};

export async function runAgentCommand(args: string[]): Promise<number> {
  const { values, help } = parseFlags(spec, args, Deno.env.toObject());
  if (help) {
    console.log(helpText(spec));
    return 0;
  }
  const config = agentConfig(values);
  setupLogging(config.logLevel, config.logFormat);
  const log = getLogger(["lace", "agent"]);
  const { startAgent } = await import("../agent/start.ts");
  let agent;
  try {
    agent = await startAgent(config);
  } catch (e) {
    log.fatal("Agent could not start: {error}", { error: (e as Error).message ?? String(e) });
    return 1;
  }
  const stopSignal = Promise.withResolvers<string>();
  const onSignal = (name: string) => () => stopSignal.resolve(name);
  const handlers = (["SIGTERM", "SIGINT"] as const).map((s) => {
    const h = onSignal(s);
    Deno.addSignalListener(s, h);
    return [s, h] as const;
  });
  const signal = await stopSignal.promise;
  log.info("Received {signal}", { signal });
  for (const [s, h] of handlers) Deno.removeSignalListener(s, h);
  await agent.stop();
  return 0;
}
