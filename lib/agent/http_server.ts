/**
 * The agent's small HTTP server: Prometheus metrics, liveness, readiness and
 * the agent's view of its targets (for `lace targets` and `lace doctor`),
 * on a listener with timeouts and a connection cap (http_listener.ts).
 * Read-only; it changes nothing on the node.
 */
import { getLogger } from "@logtape/logtape";
import { joinHostPort, splitHostPort } from "../host_port.ts";
import { type HttpListener, type HttpListenerOptions, serveHttp } from "./http_listener.ts";

const log = getLogger(["lace", "http"]);

/** One registered target as the agent knows it, with the pod it came from. */
export interface TargetView {
  family: "ipv4" | "ipv6";
  address: string;
  port: number;
  networkId: number;
  mark: number;
  pod?: string;
  network?: string;
  container?: string;
  probe?: string;
  handler?: string;
  httpPath?: string;
  httpScheme?: string;
}

export interface Readiness {
  ready: boolean;
  /** What is missing, one sentence each; empty when ready. */
  reasons: string[];
}

export interface StatusProvider {
  readiness(): Readiness;
  targets(): TargetView[];
  metricsText(): Promise<string>;
  metricsContentType: string;
}

/** Splits "host:port" or "[v6]:port" into Deno.serve's hostname and port. */
export function listenAddress(addr: string): { hostname: string; port: number } {
  let host: string, port: string;
  try {
    [host, port] = splitHostPort(addr);
  } catch (cause) {
    throw new TypeError(`Address must be host:port: "${addr}"`, { cause });
  }
  if (!/^\d+$/.test(port)) throw new TypeError(`Address must be host:port: "${addr}"`);
  if (Number(port) > 65535) throw new RangeError(`Port out of range: "${addr}"`);
  return { hostname: host, port: Number(port) };
}

/** Handles one request; separate from the listener so tests call it directly. */
export async function handleRequest(req: Request, status: StatusProvider): Promise<Response> {
  const url = new URL(req.url);
  if (req.method !== "GET" && req.method !== "HEAD") {
    return new Response("Method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
  }
  switch (url.pathname) {
    case "/healthz":
      return new Response("ok\n");
    case "/readyz": {
      const r = status.readiness();
      const body = r.ready ? "ok\n" : r.reasons.map((s) => `not ready: ${s}\n`).join("");
      return new Response(body, { status: r.ready ? 200 : 503 });
    }
    case "/metrics":
      return new Response(await status.metricsText(), {
        headers: { "content-type": status.metricsContentType },
      });
    case "/targets":
      return Response.json(status.targets());
  }
  return new Response("Not found: try /metrics, /healthz, /readyz or /targets\n", { status: 404 });
}

/** A running server: where it listens, whether it still accepts, and how to stop it. */
export interface HttpSurface extends HttpListener {
  /** "host:port" as bound. */
  readonly addr: string;
}

/** Starts the server on `addr` (host:port). */
export function startHttpServer(
  addr: string,
  status: StatusProvider,
  options: Omit<HttpListenerOptions, "name"> = {},
): HttpSurface {
  const { hostname, port } = listenAddress(addr);
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port });
  } catch (cause) {
    throw new Error(
      `Cannot serve metrics and health on "${addr}": choose a free --metrics-addr, or an empty one to run without the server`,
      { cause },
    );
  }
  const bound = listener.addr as Deno.NetAddr;
  const shown = joinHostPort(bound.hostname, bound.port);
  log.info("Serving metrics and health on {addr}", { addr: shown });
  const served = serveHttp(listener, (req) => handleRequest(req, status), {
    ...options,
    name: "http",
  });
  return {
    addr: shown,
    failure: () => served.failure(),
    get connections() {
      return served.connections;
    },
    shutdown: () => served.shutdown(),
  };
}
