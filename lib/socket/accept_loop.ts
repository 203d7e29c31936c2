/**
 * The accept loop every listener of the agent shares (the HTTP listeners and
 * the CNI socket): a cap on connections open at once, and accept errors
 * (EMFILE when the process is out of file descriptors, ENFILE, ENOBUFS) retried
 * with backoff instead of ending the loop while the agent still says ready.
 * After a few failures in a row the loop reports itself failing, so readiness,
 * a metric and a log line say that the listener no longer takes connections.
 *
 * A listener every pod can reach must not be held by one of them: with `peer`
 * and `maxPerPeer`, one source address holds at most that many connections; at
 * either cap the oldest idle connection (a
 * keep-alive waiting between requests, which loses nothing when closed) makes
 * room for the new one, and only when none is idle is the new one refused.
 */
import { getLogger } from "@logtape/logtape";
import { type Backoff, backoffDelay } from "../time/backoff.ts";
import { realTimers, type Timers } from "../time/timers.ts";
import { errorText } from "../text/error.ts";
import { limitedLog } from "../log/limiter.ts";

const log = getLogger(["lace", "listen"]);

/** What the loop needs of a listener; a Deno.Listener fits, a test passes one that throws. */
export interface Acceptor<C extends { close(): void }> {
  accept(): Promise<C>;
  close(): void;
}

export interface AcceptLoopOptions<C extends { close(): void }> {
  /** Name in logs, metrics and readiness, e.g. "cni" or "http". */
  name: string;
  /**
   * Serves one connection; the loop closes it when the promise settles. `slot.idle(true)`
   * while it waits between requests makes it a candidate for eviction at a cap.
   */
  serve(conn: C, slot: ConnectionSlot): Promise<void>;
  /** Connections open at once; one beyond it evicts the oldest idle one, else goes to `refuse`. */
  maxConnections: number;
  /** Connections open at once from one peer (as `peer` names it); the same rule at its cap. */
  maxPerPeer?: number;
  /** The peer a connection comes from (its source address); undefined: no per-peer limit. */
  peer?(conn: C): string | undefined;
  /** Tells a connection beyond a cap why it is closed; should not wait on the client. */
  refuse?(conn: C, cap: "connections" | "peer"): Promise<void> | void;
  /** Called for each connection refused at a cap, and each idle one closed to make room. */
  onCapped?(outcome: "refused" | "evicted", cap: "connections" | "peer"): void;
  /** Delay before retrying a failed accept: doubles from `initialMs` up to `maxMs`. */
  backoff?: Backoff;
  /** Failed accepts in a row after which the listener counts as failing. */
  failingAfter?: number;
  /** Called on every failed accept, and when the failing state changes. */
  onAcceptError?(error: unknown): void;
  onFailingChange?(failing: boolean): void;
  timers?: Timers;
}

/** What a served connection tells the loop about itself. */
export interface ConnectionSlot {
  /** True while the connection waits between requests: evicting it then loses nothing. */
  idle(idle: boolean): void;
}

/** One open connection: its peer, and since when it is idle (a sequence number; null: busy). */
interface Open {
  peer: string | undefined;
  idleSince: number | null;
}

/** Accepts connections until closed; see the file comment. */
export class AcceptLoop<C extends { close(): void }> {
  readonly #listener: Acceptor<C>;
  readonly #opts: AcceptLoopOptions<C>;
  readonly #timers: Timers;
  readonly #conns = new Map<C, Open>();
  readonly #perPeer = new Map<string, number>();
  #idleSeq = 0;
  readonly #tasks = new Set<Promise<void>>();
  #closed = false;
  #failures = 0;
  #lastError: string | null = null;
  #wake: (() => void) | undefined;
  #retryTimer: unknown;
  readonly #done: Promise<void>;

  constructor(listener: Acceptor<C>, opts: AcceptLoopOptions<C>) {
    this.#listener = listener;
    this.#opts = opts;
    this.#timers = opts.timers ?? realTimers;
    this.#done = this.#run();
  }

  /** Connections being served now. */
  get connections(): number {
    return this.#conns.size;
  }

  /** Why the listener takes no connections, or null while accepting works. */
  failure(): string | null {
    const after = this.#opts.failingAfter ?? 3;
    return this.#failures >= after
      ? `${this.#opts.name} listener cannot accept connections (${this.#failures} failures in a row, last: ${this.#lastError})`
      : null;
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      let conn: C;
      try {
        conn = await this.#listener.accept();
      } catch (error) {
        if (this.#closed) return;
        await this.#failed(error);
        continue;
      }
      if (this.#failures > 0) this.#recovered();
      if (this.#closed) {
        safeClose(conn);
        return;
      }
      const peer = this.#opts.peer?.(conn);
      const cap = this.#admit(peer);
      if (cap) {
        this.#capped("refused", cap);
        Promise.resolve()
          .then(() => this.#opts.refuse?.(conn, cap))
          .catch(() => {})
          .finally(() => safeClose(conn));
        continue;
      }
      const open: Open = { peer, idleSince: null };
      this.#conns.set(conn, open);
      if (peer !== undefined) this.#perPeer.set(peer, (this.#perPeer.get(peer) ?? 0) + 1);
      const slot: ConnectionSlot = {
        idle: (idle) => {
          open.idleSince = idle ? this.#idleSeq++ : null;
        },
      };
      const task: Promise<void> = Promise.resolve()
        .then(() => this.#opts.serve(conn, slot))
        .catch((e) => {
          const what = { name: this.#opts.name, error: String(e) };
          // One closed to make room at a cap fails its next read or write: nothing to report.
          if (!this.#conns.has(conn)) {
            log.debug("{name} connection closed at a cap failed: {error}", what);
            return;
          }
          // Any pod can reach some listeners and break its connections: limited per listener.
          const key = { reason: `ConnectionFailed(${what.name})`, namespace: "" };
          limitedLog(log, "warning", key, "{name} connection failed: {error}", what);
        })
        .finally(() => {
          this.#forget(conn);
          safeClose(conn);
          this.#tasks.delete(task);
        });
      this.#tasks.add(task);
    }
  }

  /**
   * Makes room for a connection from `peer`: at the peer's cap, and then at the
   * listener's, the oldest idle connection (of that peer, or of any) is closed.
   * Returns the cap that has no room, or undefined when the connection may be served.
   */
  #admit(peer: string | undefined): "connections" | "peer" | undefined {
    const perPeer = this.#opts.maxPerPeer;
    if (peer !== undefined && perPeer !== undefined && (this.#perPeer.get(peer) ?? 0) >= perPeer) {
      if (!this.#evictOldestIdle(peer)) return "peer";
      this.#capped("evicted", "peer");
    }
    if (this.#conns.size >= this.#opts.maxConnections) {
      if (!this.#evictOldestIdle(undefined)) return "connections";
      this.#capped("evicted", "connections");
    }
    return undefined;
  }

  /** Closes the connection idle longest (of `peer` when given); false when none is idle. */
  #evictOldestIdle(peer: string | undefined): boolean {
    let oldest: [C, Open] | undefined;
    for (const entry of this.#conns) {
      const since = entry[1].idleSince;
      if (since === null || (peer !== undefined && entry[1].peer !== peer)) continue;
      if (!oldest || since < oldest[1].idleSince!) oldest = entry;
    }
    if (!oldest) return false;
    this.#forget(oldest[0]);
    safeClose(oldest[0]);
    return true;
  }

  #forget(conn: C): void {
    const open = this.#conns.get(conn);
    if (!open) return;
    this.#conns.delete(conn);
    if (open.peer === undefined) return;
    const left = (this.#perPeer.get(open.peer) ?? 1) - 1;
    if (left > 0) this.#perPeer.set(open.peer, left);
    else this.#perPeer.delete(open.peer);
  }

  /**
   * Counts a refusal or eviction (onCapped: the metrics) and logs it through the log limiter:
   * any pod can open connections to some listeners, so a flood is a few lines and a summary a
   * minute per listener (lib/log/limiter.ts), not a line a connection.
   */
  #capped(what: "refused" | "evicted", cap: "connections" | "peer"): void {
    this.#opts.onCapped?.(what, cap);
    const outcome = what === "refused" ? "connection refused" : "idle connection closed";
    const at = cap === "peer" ? "one peer's cap" : "the listener's cap";
    limitedLog(
      log,
      "warning",
      {
        reason: `ConnectionCapped(${this.#opts.name})`,
        namespace: "",
        subject: `${outcome} at ${at}`,
      },
      "{name}: {outcome} at {at} ({max} connections open at most, {perPeer} per peer)",
      {
        name: this.#opts.name,
        outcome,
        at,
        max: this.#opts.maxConnections,
        perPeer: this.#opts.maxPerPeer ?? "no limit",
      },
    );
  }

  async #failed(error: unknown): Promise<void> {
    this.#failures++;
    this.#lastError = errorText(error);
    const delay = backoffDelay(
      this.#failures,
      this.#opts.backoff ?? { initialMs: 50, maxMs: 5000 },
    );
    log.error(
      "{name}: accepting a connection failed ({failures} in a row), retrying in {delay} ms: {error}",
      {
        name: this.#opts.name,
        failures: this.#failures,
        delay,
        error: this.#lastError,
      },
    );
    this.#opts.onAcceptError?.(error);
    if (this.#failures === (this.#opts.failingAfter ?? 3)) this.#opts.onFailingChange?.(true);
    await new Promise<void>((resolve) => {
      this.#wake = resolve;
      this.#retryTimer = this.#timers.setTimeout(resolve, delay);
    });
    this.#wake = undefined;
  }

  #recovered(): void {
    const wasFailing = this.failure() !== null;
    log.info("{name}: accepting connections again after {failures} failures", {
      name: this.#opts.name,
      failures: this.#failures,
    });
    this.#failures = 0;
    this.#lastError = null;
    if (wasFailing) this.#opts.onFailingChange?.(false);
  }

  /** Stops accepting, closes every connection and waits for their tasks; idempotent. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      safeClose(this.#listener);
      this.#timers.clearTimeout(this.#retryTimer);
      this.#wake?.();
      for (const c of this.#conns.keys()) safeClose(c);
    }
    await this.#done;
    await Promise.allSettled([...this.#tasks]);
  }
}

/** Closes a connection or listener that may already be closed. */
export function safeClose(c: { close(): void }): void {
  try {
    c.close();
  } catch { /* already closed */ }
}

/** The byte stream a listener hands out; a Deno.Conn fits, a test passes a fake. */
export interface Stream {
  /** Where the connection comes from (a Deno.Conn's); tests may leave it out. */
  readonly remoteAddr?: Deno.Addr;
  read(p: Uint8Array): Promise<number | null>;
  write(p: Uint8Array): Promise<number>;
  close(): void;
}

/**
 * Writes all of `bytes`, closing the stream when that takes longer than `ms`
 * (a client that stops reading must not hold the connection and its buffers
 * forever); rejects when the write fails or was cut off.
 */
export async function writeAll(
  conn: Stream,
  bytes: Uint8Array,
  ms: number,
  timers: Timers = realTimers,
): Promise<void> {
  let timedOut = false;
  const timer = timers.setTimeout(() => {
    timedOut = true;
    safeClose(conn);
  }, ms);
  try {
    for (let off = 0; off < bytes.length;) off += await conn.write(bytes.subarray(off));
  } catch (e) {
    throw timedOut ? new Error(`Write not finished within ${ms} ms; connection closed`) : e;
  } finally {
    timers.clearTimeout(timer);
  }
}

/** A TCP connection's source address (the peer per-peer limits count), else undefined. */
export function tcpPeer(conn: Stream): string | undefined {
  const addr = conn.remoteAddr;
  return addr?.transport === "tcp" ? addr.hostname : undefined;
}
