/**
 * An HTTP/1.1 server over any listener (TCP on the node, or the local unix
 * socket) with the limits Deno.serve does not offer: a header timeout (a
 * client that sends half a head and stops is closed, slow-loris style), an
 * idle timeout between keep-alive requests, a write timeout, a cap on the
 * head's size and on the connections open at once, in all and per source
 * address (the oldest idle keep-alive connection makes room at either cap),
 * and an accept loop that survives EMFILE. It serves GET and HEAD without
 * bodies, all the agent needs.
 */
import { getLogger } from "@logtape/logtape";
import {
  AcceptLoop,
  type Acceptor,
  type ConnectionSlot,
  type Stream,
  tcpPeer,
  writeAll,
} from "../../socket/accept_loop.ts";
import {
  chunkBytes,
  chunkedHeadBytes,
  errorResponseBytes,
  HeadBuffer,
  HttpRequestError,
  keepsAlive,
  LAST_CHUNK,
  MAX_HEAD_BYTES,
  parseRequestHead,
  responseBytes,
} from "./wire.ts";
import { realTimers, sleep, type Timers } from "../../time/timers.ts";
import { TokenBuckets } from "../../time/token_buckets.ts";
import { limitedLog } from "../../log/limiter.ts";

const log = getLogger(["lace", "http"]);

export interface HttpLimits {
  /** From a connection's start, or a request's first byte, to the end of its head (ms). */
  headerTimeoutMs: number;
  /** Between keep-alive requests before the connection is closed (ms). */
  idleTimeoutMs: number;
  /** A response must be written within this long, else the connection is closed (ms). */
  writeTimeoutMs: number;
  /**
   * Connections open at once; one more closes the oldest idle keep-alive connection, or is
   * answered 503 and closed when none is idle.
   */
  maxConnections: number;
  /**
   * Connections open at once from one TCP source address, under the same rule: a pod on the
   * node's network cannot hold the listener's every connection.
   */
  maxConnectionsPerPeer: number;
  /**
   * Whether a connection that has not finished its first request head may be closed to make
   * room at a cap, like an idle one. For the health listener: its one client, the kubelet,
   * sends its head at once, so a flood of connections that send nothing or dribble (from a
   * local user; pods cannot reach loopback) only ever closes each other.
   */
  evictBeforeFirstHead: boolean;
  /**
   * A head still incomplete after two reads is read no more often than this (ms): the kernel
   * gathers what arrives meanwhile. Every read costs the agent's only thread, and a client
   * sending one byte per packet would otherwise buy one read per byte.
   * A scraper's or the kubelet's head arrives in one read.
   */
  headReadPaceMs: number;
  /**
   * Requests one TCP source address may make per second, with a burst of twice as many; 0: no
   * limit. Beyond it the next request waits (its connection counts as idle meanwhile), so a pod
   * that pipelines requests as fast as it can costs the agent no more than this.
   */
  requestsPerPeerPerSecond: number;
}

/** Defaults sized for a scraper every few seconds and a kubelet probe every few seconds. */
export const DEFAULT_HTTP_LIMITS: HttpLimits = {
  headerTimeoutMs: 10_000,
  idleTimeoutMs: 60_000,
  writeTimeoutMs: 10_000,
  maxConnections: 64,
  // A scraper or two per address; a pod that opens more only closes its own idle ones.
  maxConnectionsPerPeer: 8,
  evictBeforeFirstHead: false,
  headReadPaceMs: 50,
  // A scraper asks every few seconds; ten a second is far above any honest client's need.
  requestsPerPeerPerSecond: 10,
};

export interface HttpListenerOptions extends Partial<HttpLimits> {
  /** Name in logs, metrics and readiness ("http", "local"). */
  name: string;
  onAcceptError?(error: unknown): void;
  onFailingChange?(failing: boolean): void;
  /** Called for each connection refused at a cap, and each idle one closed to make room. */
  onCapped?(outcome: "refused" | "evicted", cap: "connections" | "peer"): void;
  timers?: Timers;
}

export interface HttpListener {
  /** Why the listener takes no connections, or null while it accepts. */
  failure(): string | null;
  /** Connections open now. */
  readonly connections: number;
  /** Stops accepting and closes every connection; idempotent. */
  shutdown(): Promise<void>;
}

/** Serves `handler` on every connection `listener` accepts, within the limits above. */
export function serveHttp(
  listener: Acceptor<Stream>,
  handler: (req: Request) => Response | Promise<Response>,
  options: HttpListenerOptions,
): HttpListener {
  const limits: HttpLimits = { ...DEFAULT_HTTP_LIMITS, ...withoutUndefined(options) };
  const timers = options.timers ?? realTimers;
  const perSecond = limits.requestsPerPeerPerSecond;
  const buckets = perSecond > 0
    ? new TokenBuckets({ burst: 2 * perSecond, refillMs: 1000 / perSecond, maxKeys: 4096 })
    : undefined;
  /** Waits until `peer` may make another request (no wait without a peer or a limit). */
  const rate = (peer: string | undefined) => async (slot: ConnectionSlot) => {
    if (!buckets || peer === undefined) return;
    for (let wait; (wait = buckets.take(peer, timers.now())) > 0;) {
      slot.idle(true);
      await sleep(timers, wait);
      slot.idle(false);
    }
  };
  const loop = new AcceptLoop(listener, {
    name: options.name,
    maxConnections: limits.maxConnections,
    maxPerPeer: limits.maxConnectionsPerPeer,
    peer: tcpPeer,
    serve: (conn, slot) =>
      serveConnection(conn, slot, handler, limits, timers, options.name, rate(tcpPeer(conn))),
    refuse: (conn, cap) =>
      writeAll(
        conn,
        errorResponseBytes(
          503,
          cap === "peer" ? "Too many connections from your address" : "Too many connections",
        ),
        1000,
        timers,
      ),
    onCapped: options.onCapped,
    onAcceptError: options.onAcceptError,
    onFailingChange: options.onFailingChange,
    timers,
  });
  return {
    failure: () => loop.failure(),
    get connections() {
      return loop.connections;
    },
    shutdown: () => loop.close(),
  };
}

function withoutUndefined(o: Partial<HttpLimits>): Partial<HttpLimits> {
  return Object.fromEntries(
    ([
      "headerTimeoutMs",
      "idleTimeoutMs",
      "writeTimeoutMs",
      "maxConnections",
      "maxConnectionsPerPeer",
      "evictBeforeFirstHead",
      "headReadPaceMs",
      "requestsPerPeerPerSecond",
    ] as const)
      .filter((k) => o[k] !== undefined).map((k) => [k, o[k]]),
  );
}

/**
 * Writes a response whose handler asked for a chunked body (a large one made
 * in pieces, such as /targets): each chunk is written before the next is
 * made, so the event loop runs between them. Returns false when the
 * connection broke (or the body failed half-way), which closes it.
 */
async function writeChunked(
  conn: Stream,
  res: Response,
  headOnly: boolean,
  keepAlive: boolean,
  limits: HttpLimits,
  timers: Timers,
): Promise<boolean> {
  const reader = res.body!.getReader();
  try {
    await writeAll(
      conn,
      chunkedHeadBytes(res.status, res.headers, { keepAlive }),
      limits.writeTimeoutMs,
      timers,
    );
    if (headOnly) return true;
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      if (r.value.length > 0) {
        await writeAll(conn, chunkBytes(r.value), limits.writeTimeoutMs, timers);
      }
    }
    await writeAll(conn, LAST_CHUNK, limits.writeTimeoutMs, timers);
    return true;
  } catch (e) {
    log.debug("A chunked response ended early: {error}", { error: String(e) });
    return false;
  } finally {
    reader.cancel().catch(() => {});
  }
}

async function serveConnection(
  conn: Stream,
  slot: ConnectionSlot,
  handler: (req: Request) => Response | Promise<Response>,
  limits: HttpLimits,
  timers: Timers,
  name: string,
  paced: (slot: ConnectionSlot) => Promise<void>,
): Promise<void> {
  const buf = new Uint8Array(4096);
  const pending = new HeadBuffer();
  let first = true;
  if (limits.evictBeforeFirstHead) slot.idle(true);
  for (;;) {
    // One deadline at a time closes the connection: the head's, or the idle wait before it.
    let deadline: unknown = null;
    const arm = (ms: number, why: string) => {
      if (deadline !== null) timers.clearTimeout(deadline);
      deadline = timers.setTimeout(() => {
        log.debug("{name}: closing a connection: {why}", { name, why });
        try {
          conn.close();
        } catch { /* already closed */ }
      }, ms);
    };
    if (first || pending.length > 0) {
      arm(limits.headerTimeoutMs, "no complete request head in time");
    } else {
      arm(limits.idleTimeoutMs, "idle");
      slot.idle(true); // between requests: evicting it at a cap loses nothing
    }
    let end: number;
    let reads = 0;
    try {
      while ((end = pending.end()) < 0) {
        if (pending.length > MAX_HEAD_BYTES) {
          await writeAll(
            conn,
            errorResponseBytes(431, "Request head too large"),
            limits.writeTimeoutMs,
            timers,
          );
          return;
        }
        if (reads++ >= 2) await sleep(timers, limits.headReadPaceMs);
        const n = await conn.read(buf).catch(() => null);
        if (n === null) return; // closed by the client, a deadline or an eviction
        if (pending.length === 0 && !first) {
          slot.idle(false);
          arm(limits.headerTimeoutMs, "no complete request head in time");
        }
        pending.append(buf.subarray(0, n));
      }
    } finally {
      if (deadline !== null) timers.clearTimeout(deadline);
    }
    if (first) slot.idle(false);
    first = false;
    const headBytes = pending.take(end);
    let head;
    try {
      head = parseRequestHead(headBytes);
    } catch (e) {
      const status = e instanceof HttpRequestError ? e.status : 400;
      await writeAll(
        conn,
        errorResponseBytes(status, (e as Error).message),
        limits.writeTimeoutMs,
        timers,
      );
      return;
    }
    await paced(slot);
    let keepAlive = keepsAlive(head);
    let bytes: Uint8Array;
    try {
      const res = await handler(
        new Request(`http://localhost${head.target}`, {
          method: head.method,
          headers: head.headers,
        }),
      );
      if (res.headers.get("transfer-encoding") === "chunked" && res.body) {
        if (!await writeChunked(conn, res, head.method === "HEAD", keepAlive, limits, timers)) {
          return;
        }
        if (!keepAlive) return;
        continue;
      }
      bytes = responseBytes(res.status, res.headers, new Uint8Array(await res.arrayBuffer()), {
        head: head.method === "HEAD",
        keepAlive,
      });
    } catch (e) {
      // A request any pod may send: limited per listener (log/limiter.ts).
      const key = { reason: `HandlerFailed(${name})`, namespace: "" };
      limitedLog(log, "error", key, "{name}: handler failed: {error}", { name, error: String(e) });
      bytes = errorResponseBytes(500, "Internal error");
      keepAlive = false;
    }
    await writeAll(conn, bytes, limits.writeTimeoutMs, timers);
    if (!keepAlive) return;
  }
}
