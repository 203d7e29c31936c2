/**
 * Pods on the node's network flooding the agent's node-IP listener, played on
 * loopback (docs/threat-model.md, "A pod"). Keep-alive connections, each from its
 * own source address (127.0.0.0/8 is all local: each address stands for a
 * pod), each sending a valid request every `periodMs` and reconnecting when the
 * agent closes it; and a client sending a 16 KiB request head one byte per
 * write, over and over. Also the kubelet's side: one probe on a new connection.
 * Used by tests/listener_flood_test.ts and the bench (bench/listener_flood.ts).
 */
import net from "node:net";
import { readUntilClosed } from "./fake_listener.ts";

export interface FloodOptions {
  hostname: string;
  port: number;
  /** Keep-alive connections held at once (64: the node listener's old global cap). */
  connections: number;
  /** Each connection sends a request this often (ms). */
  periodMs: number;
  /** How many source addresses (127.0.0.2, .3, …) the connections are spread over. */
  sources: number;
  /** The path requested. */
  path?: string;
  /** Bytes of the head sent one byte per write, or 0 for none. */
  dribbleBytes?: number;
}

/** What the attacker has seen so far. */
export interface FloodStats {
  /** Responses read on the keep-alive connections, by status. */
  responses: Map<number, number>;
  /** Keep-alive connections the agent closed (evicted, refused or timed out). */
  closed: number;
  /** Whole dribbled heads the agent answered. */
  dribbled: number;
}

/** A running flood; `stop()` closes every connection. */
export interface Flood {
  readonly stats: FloodStats;
  /** Responses of any status read so far on the keep-alive connections. */
  answered(): number;
  stop(): void;
}

/** A request head of exactly `bytes` bytes for `path`, padded with one header. */
export function paddedHead(path: string, bytes: number): Uint8Array {
  const start = `GET ${path} HTTP/1.1\r\nHost: agent\r\nX-Pad: `;
  const end = "\r\n\r\n";
  return new TextEncoder().encode(start + "a".repeat(bytes - start.length - end.length) + end);
}

/** Starts the flood against hostname:port; see the file comment. */
export function startFlood(opts: FloodOptions): Flood {
  const stats: FloodStats = { responses: new Map(), closed: 0, dribbled: 0 };
  const request = `GET ${opts.path ?? "/metrics"} HTTP/1.1\r\nHost: agent\r\n\r\n`;
  const sockets = new Set<net.Socket>();
  let stopped = false;

  const open = (source: string, onData: (text: string) => void, onClose: () => void) => {
    const s = net.connect({ host: opts.hostname, port: opts.port, localAddress: source });
    s.setNoDelay(true);
    sockets.add(s);
    s.setEncoding("latin1");
    s.on("data", onData);
    s.on("error", () => {});
    s.on("close", () => {
      sockets.delete(s);
      if (!stopped) onClose();
    });
    return s;
  };

  const slots: { socket: net.Socket | undefined }[] = [];
  for (let i = 0; i < opts.connections; i++) {
    const source = `127.0.0.${2 + (i % opts.sources)}`;
    const slot = { socket: undefined as net.Socket | undefined };
    slots.push(slot);
    const connect = () => {
      slot.socket = open(source, (text) => {
        for (const m of text.matchAll(/HTTP\/1\.1 (\d{3}) /g)) {
          const status = Number(m[1]);
          stats.responses.set(status, (stats.responses.get(status) ?? 0) + 1);
        }
      }, () => {
        stats.closed++;
        slot.socket = undefined;
      });
      slot.socket.write(request);
    };
    connect();
    // Each connection's pace: a request every periodMs, a new connection when it was closed.
    const tick = setInterval(() => {
      if (stopped) return clearInterval(tick);
      if (slot.socket && !slot.socket.destroyed) slot.socket.write(request);
      else connect();
    }, opts.periodMs);
  }

  if (opts.dribbleBytes) {
    const head = paddedHead(opts.path ?? "/metrics", opts.dribbleBytes);
    const dribble = () => {
      let answered = false;
      const s = open(`127.0.0.${2 + opts.sources}`, (text) => {
        if (!answered && /^HTTP\/1\.1 /.test(text)) {
          answered = true;
          stats.dribbled++;
          s.destroy();
        }
      }, () => {
        if (!stopped) setTimeout(dribble, 0);
      });
      let at = 0;
      const next = () => {
        if (stopped || s.destroyed || at >= head.length) return;
        s.write(head.subarray(at, ++at), next);
      };
      s.on("connect", next);
    };
    dribble();
  }

  return {
    stats,
    answered: () => [...stats.responses.values()].reduce((a, b) => a + b, 0),
    stop() {
      stopped = true;
      for (const s of sockets) s.destroy();
    },
  };
}

/**
 * One probe as the kubelet sends it: a new connection, `Connection: close`,
 * the whole head in one write. Resolves the status, or 0 when the connection
 * was closed without a response or `timeoutMs` passed.
 */
export async function probeOnce(addr: string, path: string, timeoutMs = 10_000): Promise<number> {
  const at = addr.lastIndexOf(":");
  const conn = await Deno.connect({
    hostname: addr.slice(0, at).replace(/^\[|\]$/g, ""),
    port: Number(addr.slice(at + 1)),
  });
  const timer = setTimeout(() => {
    try {
      conn.close();
    } catch { /* already closed */ }
  }, timeoutMs);
  try {
    await conn.write(
      new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n`),
    );
    const text = await readUntilClosed(conn);
    return Number(/^HTTP\/1\.1 (\d{3}) /.exec(text)?.[1] ?? 0);
  } finally {
    clearTimeout(timer);
    try {
      conn.close();
    } catch { /* closed by the server or the timer */ }
  }
}

/** Connections one source holds open without a byte sent; see holdSilent. */
export interface HeldConnections extends Disposable {
  /** How many of them the agent has closed so far. */
  closed(): number;
}

/**
 * Opens `count` connections from `source` (a 127.0.0.0/8 address standing for a pod) that send
 * nothing: before its first request head a connection to the node listener is never idle, so
 * each holds one of its peer's slots until the header timeout closes it. Resolves once all are
 * connected; disposing closes them.
 */
export async function holdSilent(
  hostname: string,
  port: number,
  source: string,
  count: number,
): Promise<HeldConnections> {
  const sockets: net.Socket[] = [];
  let closed = 0;
  const held = {
    closed: () => closed,
    [Symbol.dispose]() {
      for (const s of sockets) s.destroy();
    },
  };
  try {
    for (let i = 0; i < count; i++) {
      const s = net.connect({ host: hostname, port, localAddress: source });
      sockets.push(s);
      s.on("close", () => closed++);
      await new Promise<void>((resolve, reject) => {
        s.once("connect", resolve);
        s.once("error", reject);
      });
      s.on("error", () => {});
    }
  } catch (e) {
    held[Symbol.dispose]();
    throw e;
  }
  return held;
}

/**
 * One request from `source` on a new connection, `Connection: close`: resolves the whole
 * response as text ("" when the connection was closed without one, or `timeoutMs` passed).
 */
export function requestFrom(
  hostname: string,
  port: number,
  source: string,
  path: string,
  timeoutMs = 10_000,
): Promise<string> {
  return new Promise((resolve) => {
    let text = "";
    const s = net.connect({ host: hostname, port, localAddress: source });
    s.setEncoding("latin1");
    s.setTimeout(timeoutMs, () => s.destroy());
    s.on("data", (chunk: string) => text += chunk);
    s.on("error", () => {});
    s.on("close", () => resolve(text));
    s.write(`GET ${path} HTTP/1.1\r\nHost: agent\r\nConnection: close\r\n\r\n`);
  });
}
