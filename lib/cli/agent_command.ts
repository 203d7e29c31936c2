/**
 * `lace agent`: parse flags, set up logging, start the agent, and stop it on
 * SIGTERM/SIGINT leaving everything pinned in place for the next agent (all
 * of it removed when Lace's DaemonSet is gone; a failure there exits 1).
 */
import { getLogger } from "@logtape/logtape";
import { setupLogging } from "../log/setup.ts";
import { agentCommand, agentConfig } from "../flags/agent.ts";
import { parseCommand } from "../flags/parser.ts";

export async function runAgentCommand(args: string[]): Promise<number> {
  const options = parseCommand(agentCommand, args);
  if (options === null) return 0;
  const config = agentConfig(options);
  setupLogging(config.logLevel, config.logFormat);
  const log = getLogger(["lace", "agent"]);
  const { startAgent } = await import("../agent/start.ts");
  let agent;
  try {
    agent = await startAgent(config);
  } catch (cause) {
    // main prints the whole chain: the hint that says what to do is often in a cause.
    throw new Error("Agent could not start", { cause });
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
