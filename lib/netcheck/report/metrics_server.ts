/**
 * Serves the --watch metrics at http://HOST:PORT/metrics (Prometheus text
 * format) until `signal` aborts. Anything else is 404. The default address
 * is loopback: the figures name nodes and networks, so exposing them further
 * is the operator's choice.
 */
import { splitHostPort } from "../../net/host_port.ts";
import type { NetcheckMetrics } from "./metrics.ts";

/** A running metrics server. */
export interface MetricsServer {
  /** The port it listens on (useful with port 0). */
  port: number;
  /** Resolves when the server has stopped. */
  finished: Promise<void>;
}

/** Starts the server; throws a TypeError naming a malformed address. */
export function serveMetrics(
  metrics: NetcheckMetrics,
  address: string,
  signal: AbortSignal,
): MetricsServer {
  let host: string, port: string;
  try {
    [host, port] = splitHostPort(address);
  } catch (cause) {
    throw new TypeError(`--metrics-address must be HOST:PORT: "${address}"`, { cause });
  }
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) {
    throw new TypeError(`--metrics-address has an invalid port: "${address}"`);
  }
  const server = Deno.serve({
    hostname: host || "0.0.0.0",
    port: Number(port),
    signal,
    onListen: () => {},
  }, async (request) => {
    if (new URL(request.url).pathname !== "/metrics" || request.method !== "GET") {
      return new Response("not found\n", { status: 404 });
    }
    return new Response(await metrics.registry.metrics(), {
      headers: { "content-type": metrics.registry.contentType },
    });
  });
  return { port: server.addr.port, finished: server.finished };
}
