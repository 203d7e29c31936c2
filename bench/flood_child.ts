/**
 * The attacker of the listener-flood figure in a process of its own, so that
 * its sockets do not share the event loop of the process timing the probes:
 * `deno run -A bench/flood_child.ts HOST PORT`. Floods until SIGTERM, then
 * prints its stats as one JSON line and exits. FLOOD_PATH (default /metrics)
 * and FLOOD_DRIBBLE (bytes of the dribbled head, 0 for none) split the cost
 * between the requests and the dribble.
 */
import { startFlood } from "../tests/helpers/http_flood.ts";

const [hostname, port] = Deno.args;
const flood = startFlood({
  hostname,
  port: Number(port),
  connections: 64,
  periodMs: 500,
  sources: 64,
  path: Deno.env.get("FLOOD_PATH") ?? "/metrics",
  dribbleBytes: Number(Deno.env.get("FLOOD_DRIBBLE") ?? 16 * 1024),
});
const report = setInterval(() => console.log(JSON.stringify({ answered: flood.answered() })), 200);
Deno.addSignalListener("SIGTERM", () => {
  clearInterval(report);
  flood.stop();
  console.log(JSON.stringify({
    answered: flood.answered(),
    responses: Object.fromEntries(flood.stats.responses),
    closed: flood.stats.closed,
    dribbled: flood.stats.dribbled,
    done: true,
  }));
  Deno.exit(0);
});
