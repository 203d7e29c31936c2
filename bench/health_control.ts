/**
 * The control of the listener-flood figure: the agent's own health server (the same listener,
 * limits and handler) in a process that does nothing else, so its latency during a flood of
 * the agent is what the machine alone adds (the attacker's CPU, the loopback's softirqs), not
 * the agent: `deno run -A bench/health_control.ts`. Prints its address as one JSON line, then
 * serves until SIGTERM.
 */
import { startHealthServer } from "../lib/agent/http/surfaces.ts";
import { freeLoopbackPort } from "../lib/os/process.ts";

const addr = `127.0.0.1:${freeLoopbackPort()}`;
const server = startHealthServer(addr, {
  readiness: () => ({ ready: true, reasons: [] }),
  targets: () => [],
  metricsText: () => Promise.resolve(""),
  metricsContentType: "text/plain",
});
console.log(JSON.stringify({ addr }));
Deno.addSignalListener("SIGTERM", async () => {
  await server.shutdown();
  Deno.exit(0);
});
