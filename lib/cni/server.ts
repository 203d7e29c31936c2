/**
 * The agent's side of the CNI socket: a unix socket server, root-only, that
 * takes the plugin's ADD/DEL/CHECK/GC requests (newline-delimited JSON),
 * validates each one, calls the agent core and replies once the targets are
 * in the probe map. Nothing a client sends can crash it: a bad request gets an
 * error reply and a log line.
 */
import { getLogger } from "@logtape/logtape";
import { aboutPod, limitedLog } from "../log/limiter.ts";
import {
  AcceptLoop,
  type Acceptor,
  safeClose,
  type Stream,
  writeAll,
} from "../socket/accept_loop.ts";
import { realTimers, type Timers } from "../time/timers.ts";
import { listenUnixSocket } from "../socket/unix.ts";
import { canonicalAddress } from "../net/address.ts";
import {
  type Attachment,
  type AttachmentRef,
  MAX_LINE_BYTES,
  parseRequest,
  PROTOCOL_VERSION,
  type Reply,
  type Request,
  requestId,
} from "./protocol.ts";
import { Attachments } from "./attachments.ts";

const log = getLogger(["lace", "cni"]);

/** What the server needs from the agent; `AgentCore` provides the first two. */
export interface CniHandler {
  /** Writes the pod's targets; resolves once they are in the probe map. */
  registerAttachment(attachment: Attachment, ref: AttachmentRef): Promise<void>;
  /**
   * Forgets what CNI said about one interface of the pod (`ref`), whose other
   * interfaces keep their addresses; the watch may still keep its targets.
   */
  removeAttachment(uid: string, ref: AttachmentRef): Promise<void> | void;
  /**
   * Compares the pod's targets with the probe map; resolves with one line per
   * mismatch (empty: all present). Throw an error with `retry: true` when the
   * agent cannot tell yet (before its first sync).
   */
  check?(attachment: Attachment, ref: AttachmentRef): Promise<{ problems: string[] }>;
}

export interface CniServer {
  readonly path: string;
  /** Why the socket takes no connections (accept keeps failing), or null while it works. */
  failure(): string | null;
  /** Stops listening and removes the socket file if it is still ours; idempotent. */
  close(): Promise<void>;
}

export interface CniServerOptions {
  /** A connection idle this long between requests is closed (ms); default 30 s. */
  idleMs?: number;
  /** A request line must arrive whole within this long of its first byte (ms); default 10 s. */
  lineMs?: number;
  /** The agent must answer a request within this long, else the reply says retry (ms); 10 s. */
  requestMs?: number;
  /** A reply must be written within this long, else the connection is closed (ms); 5 s. */
  writeMs?: number;
  /** Connections beyond this many at once are refused; default 128. */
  maxConnections?: number;
  /** Accept failures (reported to metrics; the log line is written regardless). */
  onAcceptError?(error: unknown): void;
  onFailingChange?(failing: boolean): void;
  timers?: Timers;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Listens on `socketPath` for the plugin: a root-only socket (see
 * `listenUnixSocket`), replaced atomically when a stale one is there.
 */
export async function startCniServer(
  socketPath: string,
  handler: CniHandler,
  options: CniServerOptions = {},
): Promise<CniServer> {
  const socket = await listenUnixSocket(socketPath, "--cni-socket");
  const served = serveCni(socket.listener, handler, options);
  log.info("Listening for the CNI plugin on {path}", { path: socketPath });
  return {
    path: socketPath,
    failure: () => served.failure(),
    async close() {
      // Another agent may have replaced the socket since; its file is not ours to remove.
      socket.remove();
      await served.close();
    },
  };
}

/**
 * Serves the CNI protocol on connections from `listener`, with every timeout
 * and the connection cap of `options`; separate from the socket so a test can
 * pass a listener that fails or connections that stall.
 */
export function serveCni(
  listener: Acceptor<Stream>,
  handler: CniHandler,
  options: CniServerOptions = {},
): { failure(): string | null; close(): Promise<void> } {
  const timers = options.timers ?? realTimers;
  const limits = {
    idleMs: options.idleMs ?? 30_000,
    lineMs: options.lineMs ?? 10_000,
    requestMs: options.requestMs ?? 10_000,
    writeMs: options.writeMs ?? 5_000,
    timers,
  };
  const table = new Attachments();
  const loop = new AcceptLoop(listener, {
    name: "cni",
    maxConnections: options.maxConnections ?? 128,
    serve: (conn) => serveConnection(conn, handler, table, limits),
    refuse: (conn) =>
      writeReply(conn, {
        v: PROTOCOL_VERSION,
        id: null,
        ok: false,
        error: "Too many connections",
        retry: true,
      }, limits),
    onAcceptError: options.onAcceptError,
    onFailingChange: options.onFailingChange,
    timers,
  });
  return { failure: () => loop.failure(), close: () => loop.close() };
}

type Limits = {
  idleMs: number;
  lineMs: number;
  requestMs: number;
  writeMs: number;
  timers: Timers;
};

function writeReply(conn: Stream, reply: Reply, limits: Limits): Promise<void> {
  return writeAll(
    conn,
    encoder.encode(JSON.stringify(reply) + "\n"),
    limits.writeMs,
    limits.timers,
  );
}

/** The reply to one line, or a retry reply when the agent takes longer than `requestMs`. */
async function replyWithin(
  line: string,
  handler: CniHandler,
  table: Attachments,
  limits: Limits,
): Promise<Reply> {
  let timer: unknown;
  const late = new Promise<Reply>((resolve) => {
    timer = limits.timers.setTimeout(() => {
      log.warning("CNI request not answered within {ms} ms; the plugin is told to retry", {
        ms: limits.requestMs,
      });
      resolve({
        v: PROTOCOL_VERSION,
        id: requestId(line),
        ok: false,
        error: `The agent did not answer within ${limits.requestMs} ms`,
        retry: true,
      });
    }, limits.requestMs);
  });
  try {
    return await Promise.race([handleLine(line, handler, table), late]);
  } finally {
    limits.timers.clearTimeout(timer);
  }
}

/**
 * Reads request lines until the client closes, is idle too long between
 * requests, takes too long to send one line, stops reading replies, or sends
 * garbage.
 */
async function serveConnection(
  conn: Stream,
  handler: CniHandler,
  table: Attachments,
  limits: Limits,
): Promise<void> {
  const { timers } = limits;
  const buf = new Uint8Array(16 * 1024);
  let pending = new Uint8Array(0);
  // Armed from the first byte of a line until the line is complete (a slow client's deadline).
  let lineTimer: unknown = null;
  const disarmLine = () => {
    if (lineTimer !== null) timers.clearTimeout(lineTimer);
    lineTimer = null;
  };
  try {
    while (true) {
      let n: number | null;
      const idle = pending.length === 0
        ? timers.setTimeout(() => safeClose(conn), limits.idleMs)
        : null;
      try {
        n = await conn.read(buf);
      } catch {
        return; // closed by a timer, the client, or close()
      } finally {
        if (idle !== null) timers.clearTimeout(idle);
      }
      if (n === null) return;
      const joined = new Uint8Array(pending.length + n);
      joined.set(pending);
      joined.set(buf.subarray(0, n), pending.length);
      pending = joined;
      let nl: number;
      while ((nl = pending.indexOf(10)) >= 0) {
        disarmLine();
        const line = decoder.decode(pending.subarray(0, nl));
        pending = pending.slice(nl + 1);
        if (line.trim() === "") continue;
        await writeReply(conn, await replyWithin(line, handler, table, limits), limits);
      }
      if (pending.length > MAX_LINE_BYTES) {
        log.warning("CNI client sent a line longer than {max} bytes; closing", {
          max: MAX_LINE_BYTES,
        });
        await writeReply(conn, {
          v: PROTOCOL_VERSION,
          id: null,
          ok: false,
          error: `Request longer than ${MAX_LINE_BYTES} bytes`,
        }, limits);
        return;
      }
      if (pending.length > 0 && lineTimer === null) {
        lineTimer = timers.setTimeout(() => {
          log.warning("CNI client did not finish a request line within {ms} ms; closing", {
            ms: limits.lineMs,
          });
          safeClose(conn);
        }, limits.lineMs);
      }
    }
  } finally {
    disarmLine();
  }
}

/** Turns one request line into its reply; never throws. */
async function handleLine(
  line: string,
  handler: CniHandler,
  table: Attachments,
): Promise<Reply> {
  let request: Request;
  try {
    request = parseRequest(line);
    if (request.op === "add" || request.op === "check") {
      request.attachment.ips = request.attachment.ips.map((ip) => canonicalAddress(ip).address);
    }
  } catch (e) {
    const error = (e as Error).message;
    const key = { reason: "CniRequestInvalid", namespace: "" };
    limitedLog(log, "warning", key, "Invalid CNI request: {error}", { error });
    return { v: PROTOCOL_VERSION, id: requestId(line), ok: false, error };
  }
  const started = performance.now();
  try {
    const problems = await dispatch(request, handler, table);
    log.debug("CNI {op} {id} done in {ms} ms", {
      op: request.op,
      id: request.id,
      ms: Math.round((performance.now() - started) * 100) / 100,
    });
    return { v: PROTOCOL_VERSION, id: request.id, ok: true, ...(problems ? { problems } : {}) };
  } catch (e) {
    const error = (e as Error)?.message ?? String(e);
    // A refused ADD is a tenant's to repeat (its pod's sandbox is retried): limited by namespace.
    const key = "attachment" in request
      ? aboutPod(`Cni${request.op === "add" ? "Add" : "Check"}Failed`, request.attachment)
      : { reason: `Cni${request.op === "del" ? "Del" : "Gc"}Failed`, namespace: "" };
    limitedLog(log, "warning", key, "CNI {op} {id} failed: {error}", {
      op: request.op,
      id: request.id,
      error,
    });
    const retry = (e as { retry?: unknown })?.retry === true;
    const refused = (e as { refused?: unknown })?.refused === true && request.op === "add";
    return {
      v: PROTOCOL_VERSION,
      id: request.id,
      ok: false,
      error,
      ...(retry ? { retry } : {}),
      ...(refused ? { refused } : {}),
    };
  }
}

async function dispatch(
  request: Request,
  handler: CniHandler,
  table: Attachments,
): Promise<string[] | undefined> {
  switch (request.op) {
    case "add": {
      const a = request.attachment;
      await handler.registerAttachment(a, request.ref);
      table.add(request.ref, a.uid);
      log.info("CNI ADD registered {pod} {ips}", { pod: `${a.namespace}/${a.name}`, ips: a.ips });
      return;
    }
    case "check": {
      if (!handler.check) throw new Error("This agent cannot check attachments");
      return (await handler.check(request.attachment, request.ref)).problems;
    }
    case "del": {
      const uid = table.uidToRemove(request.ref, request.uid);
      table.delete(request.ref);
      if (uid) await handler.removeAttachment(uid, request.ref);
      return;
    }
    case "gc": {
      for (const { uid, ref } of table.collect(request.valid)) {
        await handler.removeAttachment(uid, ref);
      }
      return;
    }
  }
}
