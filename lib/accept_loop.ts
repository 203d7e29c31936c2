/**
 * The accept loop every listener of the agent shares (the HTTP listeners and
 * the CNI socket): a cap on connections open at once, and accept errors
 * (EMFILE when the process is out of file descriptors, ENFILE, ENOBUFS) retried
 * with backoff instead of ending the loop while the agent still says ready.
 * After a few failures in a row the loop reports itself failing, so readiness,
 * a metric and a log line say that the listener no longer takes connections.
 */
import { getLogger } from "@logtape/logtape";
import { type Backoff, backoffDelay } from "./backoff.ts";
import { realTimers, type Timers } from "./timers.ts";
import { errorText } from "./error_text.ts";

const log = getLogger(["lace", "listen"]);

/** What the loop needs of a listener; a Deno.Listener fits, a test passes one that throws. */
export interface Acceptor<C extends { close(): void }> {
  accept(): Promise<C>;
  close(): void;
}

export interface AcceptLoopOptions<C extends { close(): void }> {
  /** Name in logs, metrics and readiness, e.g. "cni" or "http". */
  name: string;
  /** Serves one connection; the loop closes it when the promise settles. */
  serve(conn: C): Promise<void>;
  /** Connections open at once; one beyond it goes to `refuse` and is closed. */
  maxConnections: number;
  /** Tells a connection beyond the cap why it is closed; should not wait on the client. */
  refuse?(conn: C): Promise<void> | void;
  /** Delay before retrying a failed accept: doubles from `initialMs` up to `maxMs`. */
  backoff?: Backoff;
  /** Failed accepts in a row after which the listener counts as failing. */
  failingAfter?: number;
  /** Called on every failed accept, and when the failing state changes. */
  onAcceptError?(error: unknown): void;
  onFailingChange?(failing: boolean): void;
  timers?: Timers;
}

/** Accepts connections until closed; see the file comment. */
export class AcceptLoop<C extends { close(): void }> {
  readonly #listener: Acceptor<C>;
  readonly #opts: AcceptLoopOptions<C>;
  readonly #timers: Timers;
  readonly #conns = new Set<C>();
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
      if (this.#conns.size >= this.#opts.maxConnections) {
        log.warning("{name}: {max} connections open, refusing another", {
          name: this.#opts.name,
          max: this.#opts.maxConnections,
        });
        Promise.resolve()
          .then(() => this.#opts.refuse?.(conn))
          .catch(() => {})
          .finally(() => safeClose(conn));
        continue;
      }
      this.#conns.add(conn);
      const task: Promise<void> = Promise.resolve()
        .then(() => this.#opts.serve(conn))
        .catch((e) =>
          log.warning("{name} connection failed: {error}", {
            name: this.#opts.name,
            error: String(e),
          })
        )
        .finally(() => {
          this.#conns.delete(conn);
          safeClose(conn);
          this.#tasks.delete(task);
        });
      this.#tasks.add(task);
    }
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
      for (const c of this.#conns) safeClose(c);
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
