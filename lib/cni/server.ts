/**
 * The agent's side of the CNI socket: a unix socket server, root-only, that
 * takes the plugin's ADD/DEL/CHECK/GC requests (newline-delimited JSON),
 * validates each one, calls the agent core and replies once the targets are
 * in the probe map. Nothing a client sends can crash it: a bad request gets an
 * error reply and a log line.
 */
import { getLogger } from "@logtape/logtape";
import { canonicalAddress } from "../datapath/probe_map.ts";
import {
  type Attachment,
  type AttachmentRef,
  MAX_LINE_BYTES,
  parseRequest,
  PROTOCOL_VERSION,
  refKey,
  type Reply,
  type Request,
  requestId,
} from "./protocol.ts";

const log = getLogger(["lace", "cni"]);

/** What the server needs from the agent; `AgentCore` provides the first two. */
export interface CniHandler {
  /** Writes the pod's targets; resolves once they are in the probe map. */
  registerAttachment(attachment: Attachment): Promise<void>;
  /** Forgets what CNI said about the pod; the watch may still keep its targets. */
  removeAttachment(uid: string): Promise<void> | void;
  /**
   * Compares the pod's targets with the probe map; resolves with one line per
   * mismatch (empty: all present). Throw an error with `retry: true` when the
   * agent cannot tell yet (before its first sync).
   */
  check?(attachment: Attachment): Promise<{ problems: string[] }>;
}

export interface CniServer {
  readonly path: string;
  /** Stops listening and removes the socket file if it is still ours; idempotent. */
  close(): Promise<void>;
}

export interface CniServerOptions {
  /** A connection idle this long is closed (ms); default 30 s. */
  idleMs?: number;
  /** Connections beyond this many at once are refused; default 128. */
  maxConnections?: number;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function dirname(path: string): string {
  const i = path.lastIndexOf("/");
  return i <= 0 ? "/" : path.slice(0, i);
}

function statOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch (e) {
    if (e instanceof Deno.errors.NotFound) return null;
    throw e;
  }
}

/**
 * Listens on `socketPath` for the plugin. The parent directory is created
 * 0700 when missing; the socket is bound under a temporary name, made 0600,
 * and renamed over the path, so a stale socket from a previous agent is
 * replaced atomically and the path is never reachable with looser
 * permissions. A path that exists and is not a socket is an error.
 */
export async function startCniServer(
  socketPath: string,
  handler: CniHandler,
  options: CniServerOptions = {},
): Promise<CniServer> {
  if (!socketPath.startsWith("/")) {
    throw new TypeError(`CNI socket path must be absolute: "${socketPath}"`);
  }
  const dir = dirname(socketPath);
  const dirInfo = statOrNull(dir);
  if (!dirInfo) {
    await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
    await Deno.chmod(dir, 0o700);
  } else if (!dirInfo.isDirectory) {
    throw new Error(`Parent of the CNI socket is not a directory: "${dir}"`);
  }
  const existing = statOrNull(socketPath);
  if (existing && !existing.isSocket) {
    throw new Error(
      `"${socketPath}" exists and is not a socket: remove it or choose another --cni-socket`,
    );
  }
  const temp = `${dir}/.${socketPath.slice(dir.length + 1)}.${Deno.pid}.${
    crypto.randomUUID().slice(0, 8)
  }`;
  const listener = Deno.listen({ transport: "unix", path: temp });
  let ino: number | null;
  try {
    await Deno.chmod(temp, 0o600);
    await Deno.rename(temp, socketPath);
    ino = Deno.lstatSync(socketPath).ino;
  } catch (e) {
    listener.close();
    throw new Error(`Cannot create the CNI socket "${socketPath}": ${(e as Error).message}`, {
      cause: e,
    });
  }
  if (existing) log.info("Replaced the stale CNI socket {path}", { path: socketPath });
  const idleMs = options.idleMs ?? 30_000;
  const maxConnections = options.maxConnections ?? 128;
  const conns = new Set<Deno.Conn>();
  const tasks = new Set<Promise<void>>();
  const table = new Attachments();
  let closed = false;

  const accepting = (async () => {
    while (!closed) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (e) {
        if (closed) return;
        log.error("Accepting on {path} failed: {error}", { path: socketPath, error: String(e) });
        return;
      }
      if (conns.size >= maxConnections) {
        const reply: Reply = {
          v: PROTOCOL_VERSION,
          id: null,
          ok: false,
          error: "Too many connections",
          retry: true,
        };
        writeLine(conn, reply).finally(() => safeClose(conn));
        continue;
      }
      conns.add(conn);
      const task = serveConnection(conn, handler, table, idleMs)
        .catch((e) => log.warning("CNI connection failed: {error}", { error: String(e) }))
        .finally(() => {
          conns.delete(conn);
          safeClose(conn);
          tasks.delete(task);
        });
      tasks.add(task);
    }
  })();
  log.info("Listening for the CNI plugin on {path}", { path: socketPath });

  return {
    path: socketPath,
    async close() {
      if (closed) return;
      closed = true;
      safeClose(listener);
      // Another agent may have replaced the socket since; its file is not ours to remove.
      if (ino !== null && statOrNull(socketPath)?.ino === ino) {
        try {
          Deno.removeSync(socketPath);
        } catch { /* already gone */ }
      }
      ino = null;
      for (const c of conns) safeClose(c);
      await accepting;
      await Promise.allSettled([...tasks]);
    },
  };
}

function safeClose(c: { close(): void }): void {
  try {
    c.close();
  } catch { /* already closed */ }
}

async function writeLine(conn: Deno.Conn, reply: Reply): Promise<void> {
  const bytes = encoder.encode(JSON.stringify(reply) + "\n");
  for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
}

/** Reads request lines until the client closes, is idle too long, or sends garbage. */
async function serveConnection(
  conn: Deno.Conn,
  handler: CniHandler,
  table: Attachments,
  idleMs: number,
): Promise<void> {
  const buf = new Uint8Array(16 * 1024);
  let pending = new Uint8Array(0);
  while (true) {
    let n: number | null;
    const timer = setTimeout(() => safeClose(conn), idleMs);
    try {
      n = await conn.read(buf);
    } catch {
      return; // closed by the idle timer, the client, or close()
    } finally {
      clearTimeout(timer);
    }
    if (n === null) return;
    const joined = new Uint8Array(pending.length + n);
    joined.set(pending);
    joined.set(buf.subarray(0, n), pending.length);
    pending = joined;
    let nl: number;
    while ((nl = pending.indexOf(10)) >= 0) {
      const line = decoder.decode(pending.subarray(0, nl));
      pending = pending.slice(nl + 1);
      if (line.trim() === "") continue;
      await writeLine(conn, await handleLine(line, handler, table));
    }
    if (pending.length > MAX_LINE_BYTES) {
      log.warning("CNI client sent a line longer than {max} bytes; closing", {
        max: MAX_LINE_BYTES,
      });
      await writeLine(conn, {
        v: PROTOCOL_VERSION,
        id: null,
        ok: false,
        error: `Request longer than ${MAX_LINE_BYTES} bytes`,
      });
      return;
    }
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
    log.warning("Invalid CNI request: {error}", { error });
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
    log.warning("CNI {op} {id} failed: {error}", { op: request.op, id: request.id, error });
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
      await handler.registerAttachment(a);
      table.add(request.ref, a.uid);
      log.info("CNI ADD registered {pod} {ips}", { pod: `${a.namespace}/${a.name}`, ips: a.ips });
      return;
    }
    case "check": {
      if (!handler.check) throw new Error("This agent cannot check attachments");
      return (await handler.check(request.attachment)).problems;
    }
    case "del": {
      const uid = table.uidToRemove(request.ref, request.uid);
      table.delete(request.ref);
      if (uid) await handler.removeAttachment(uid);
      return;
    }
    case "gc": {
      for (const uid of table.collect(request.valid)) await handler.removeAttachment(uid);
      return;
    }
  }
}

/**
 * Which sandbox (container id, interface) registered which pod uid. A pod
 * whose sandbox was recreated has a new ADD before the old sandbox's late DEL
 * or GC, and that old DEL must not take the new sandbox's targets away.
 */
export class Attachments {
  readonly #uidByRef = new Map<string, string>();
  readonly #refByUid = new Map<string, string>();

  add(ref: AttachmentRef, uid: string): void {
    const key = refKey(ref);
    this.#uidByRef.set(key, uid);
    this.#refByUid.set(uid, key);
  }

  /** The uid a DEL of `ref` should remove, or null when a newer sandbox holds it. */
  uidToRemove(ref: AttachmentRef, uid: string | undefined): string | null {
    const key = refKey(ref);
    const owner = uid ?? this.#uidByRef.get(key);
    if (!owner) return null;
    const current = this.#refByUid.get(owner);
    return current === undefined || current === key ? owner : null;
  }

  delete(ref: AttachmentRef): void {
    this.#deleteKey(refKey(ref));
  }

  #deleteKey(key: string): void {
    const uid = this.#uidByRef.get(key);
    this.#uidByRef.delete(key);
    if (uid !== undefined && this.#refByUid.get(uid) === key) this.#refByUid.delete(uid);
  }

  /** Forgets every attachment not in `valid` (CNI GC); returns the uids to remove. */
  collect(valid: AttachmentRef[]): string[] {
    const keep = new Set(valid.map(refKey));
    const gone: string[] = [];
    for (const [key, uid] of [...this.#uidByRef]) {
      if (keep.has(key)) continue;
      const current = this.#refByUid.get(uid) === key;
      this.#deleteKey(key);
      if (current) gone.push(uid);
    }
    return gone;
  }

  get size(): number {
    return this.#uidByRef.size;
  }
}
