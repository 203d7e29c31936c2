/**
 * The agent's small HTTP surfaces. The node listener (`--metrics-addr`, the
 * node's IP in the chart) serves Prometheus metrics, liveness and readiness,
 * nothing that names a pod, an address or a network. The health listener
 * (`--health-addr`, loopback only) serves liveness and readiness alone, for
 * the kubelet's probes of the agent: every pod can reach the node's IP, and
 * health must never depend on what tenants can reach.
 * The local surface, a root-only unix socket (`--agent-socket`), serves
 * everything plus the agent's view of its targets for `lace targets` and
 * `lace doctor`: who can read it could map every tenant's pods on the node.
 * Read-only; none changes anything on the node.
 */
import { getLogger } from "@logtape/logtape";
import { joinHostPort, splitHostPort } from "../../net/host_port.ts";
import { type HttpListener, type HttpListenerOptions, serveHttp } from "./server.ts";
import { listenUnixSocket } from "../../socket/unix.ts";
import { jsonArrayResponse } from "./json_array_stream.ts";
import type {
  AddressesView,
  ChainingView,
  TargetView,
  UnmatchedView,
} from "../../agent_api/views.ts";

const log = getLogger(["lace", "http"]);

export interface Readiness {
  ready: boolean;
  /** What is missing, one sentence each; empty when ready. */
  reasons: string[];
}

export interface StatusProvider {
  readiness(): Readiness;
  /**
   * Every target, made one by one as /targets writes them (65,536 at a full map); a promise of
   * them when something must be read first (the map's hits, in slices of its own).
   */
  targets(): Iterable<TargetView> | AsyncIterable<TargetView> | Promise<Iterable<TargetView>>;
  /** Recent kubelet connects into pod ranges that matched no target, newest first. */
  unmatched?(): UnmatchedView[];
  /** Addresses pods of several networks hold on this node. */
  addresses?(): AddressesView;
  /** The CNI chaining's last pass; undefined while none runs (no CNI socket). */
  chaining?(): ChainingView | undefined;
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

/**
 * Which listener a request came in on: "node" (reachable from the network:
 * metrics and health only), "health" (loopback: health only) or "local"
 * (root-only socket: everything).
 */
export type Surface = "node" | "health" | "local";

const NOT_FOUND: Record<Surface, string> = {
  node: "Not found: try /metrics, /healthz or /readyz (the agent's view is on its local socket)\n",
  health: "Not found: try /healthz or /readyz (metrics are on --metrics-addr)\n",
  local:
    "Not found: try /metrics, /healthz, /readyz, /targets, /unmatched, /addresses or /chaining\n",
};

/** Handles one request; separate from the listener so tests call it directly. */
export async function handleRequest(
  req: Request,
  status: StatusProvider,
  surface: Surface,
): Promise<Response> {
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
      if (surface === "health") break;
      return new Response(await status.metricsText(), {
        headers: { "content-type": status.metricsContentType },
      });
    case "/targets":
      if (surface === "local") return jsonArrayResponse(status.targets());
      break;
    case "/unmatched":
      if (surface === "local") return Response.json(status.unmatched?.() ?? []);
      break;
    case "/addresses":
      if (surface === "local" && status.addresses) return Response.json(status.addresses());
      break;
    case "/chaining": {
      const view = surface === "local" ? status.chaining?.() : undefined;
      if (view) return Response.json(view);
      break;
    }
  }
  return new Response(NOT_FOUND[surface], { status: 404 });
}

/** A running surface: where it listens, whether it still accepts, and how to stop it. */
export interface HttpSurface extends HttpListener {
  /** "host:port" or the socket path. */
  readonly addr: string;
}

type SurfaceOptions = Omit<HttpListenerOptions, "name">;

/**
 * How long the node listener answers /metrics with the same exposition text. Every pod can ask
 * it, and a render reads the BPF maps (system calls) and formats every series: pods asking
 * several times a second would take much of a core and stretch the health answers. A scraper
 * every 15 s sees at most 1 s of delay.
 */
export const NODE_METRICS_TTL_MS = 1000;

/**
 * `make`, called at most once per `ttlMs` on the clock `now`: callers within
 * that time share one answer, and so do callers while it is still being made,
 * however long that takes (with `ttlMs` 0, only they). A failed answer is not kept.
 */
export function sharedFor<T>(
  ttlMs: number,
  make: () => Promise<T>,
  now: () => number = () => performance.now(),
): () => Promise<T> {
  let made = -Infinity;
  let answer: Promise<T> | undefined;
  let settled = false;
  return () => {
    const t = now();
    if (answer === undefined || (settled && t - made >= ttlMs)) {
      settled = false;
      made = t;
      const mine: Promise<T> = make().catch((e) => {
        if (answer === mine) answer = undefined;
        throw e;
      });
      answer = mine;
      mine.then(() => {
        if (answer === mine) settled = true;
      }, () => {});
    }
    return answer;
  };
}

/** Listens on `addr` (host:port); a failure is thrown as `message`, with the cause. */
function listenTcp(addr: string, message: string): { listener: Deno.TcpListener; shown: string } {
  const { hostname, port } = listenAddress(addr);
  let listener: Deno.TcpListener;
  try {
    listener = Deno.listen({ hostname, port });
  } catch (cause) {
    throw new Error(message, { cause });
  }
  const bound = listener.addr as Deno.NetAddr;
  return { listener, shown: joinHostPort(bound.hostname, bound.port) };
}

/** Starts the node listener on `addr` (host:port): metrics and health only. */
export function startHttpServer(
  addr: string,
  status: StatusProvider,
  options: SurfaceOptions = {},
): HttpSurface {
  const { listener, shown } = listenTcp(
    addr,
    `Cannot serve metrics and health on "${addr}": choose a free --metrics-addr, or an empty one to run without the server`,
  );
  log.info("Serving metrics and health on {addr}", { addr: shown });
  const shared = { ...status, metricsText: sharedFor(NODE_METRICS_TTL_MS, status.metricsText) };
  const served = serveHttp(listener, (req) => handleRequest(req, shared, "node"), {
    ...options,
    name: "http",
  });
  return withAddr(served, shown, () => {});
}

/**
 * Limits of the health listener. Its one client is the kubelet, a new
 * connection per probe (it sends no keep-alive) every few seconds: a small
 * cap, short timeouts, and a connection that has not finished its first head
 * counts as idle, so a flood of connections on loopback closes its own.
 */
export const HEALTH_LIMITS = {
  maxConnections: 16,
  maxConnectionsPerPeer: 16,
  headerTimeoutMs: 2_000,
  idleTimeoutMs: 2_000,
  writeTimeoutMs: 2_000,
  evictBeforeFirstHead: true,
  // Every client is 127.0.0.1: a rate per address would let a local flood delay the kubelet.
  requestsPerPeerPerSecond: 0,
} as const;

/**
 * Starts the health listener on `addr`, a loopback host:port (config checks
 * it): `/healthz` and `/readyz` only. The chart's liveness and readiness
 * probes use it (`host: 127.0.0.1`; the agent runs in the host's network), so
 * no pod outside the host's network can reach them however it floods the
 * node's IP (a flood on loopback closes its own unfinished connections).
 */
export function startHealthServer(
  addr: string,
  status: StatusProvider,
  options: SurfaceOptions = {},
): HttpSurface {
  const { listener, shown } = listenTcp(
    addr,
    `Cannot serve health on "${addr}": choose a free loopback --health-addr, or an empty one to run without it`,
  );
  log.info("Serving health for the kubelet's probes on {addr}", { addr: shown });
  const served = serveHttp(listener, (req) => handleRequest(req, status, "health"), {
    ...HEALTH_LIMITS,
    ...options,
    name: "health",
  });
  return withAddr(served, shown, () => {});
}

/**
 * Starts the local surface on a root-only unix socket (0600 in a 0700
 * directory, replacing a stale one atomically): everything, `/targets` too.
 */
export async function startLocalServer(
  socketPath: string,
  status: StatusProvider,
  options: SurfaceOptions = {},
): Promise<HttpSurface> {
  const socket = await listenUnixSocket(socketPath, "--agent-socket");
  log.info("Serving the agent's local view on {path}", { path: socketPath });
  const served = serveHttp(socket.listener, (req) => handleRequest(req, status, "local"), {
    ...options,
    name: "local",
  });
  return withAddr(served, socketPath, () => socket.remove());
}

function withAddr(served: HttpListener, addr: string, cleanup: () => void): HttpSurface {
  return {
    addr,
    failure: () => served.failure(),
    get connections() {
      return served.connections;
    },
    async shutdown() {
      cleanup();
      await served.shutdown();
    },
  };
}
