import assert from "node:assert/strict";
import type { Stream } from "../../socket/accept_loop.ts";
import { readUntilClosed, scriptedListener } from "../../../tests/helpers/fake_listener.ts";
import { fakeTime } from "../../../tests/helpers/fake_time.ts";
import { waitFor } from "../../../tests/helpers/wait.ts";
import { type HttpListener, serveHttp } from "./server.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const ok = () => new Response("ok\n");

/** The client's end of an in-memory connection: it writes request bytes, reads the server's. */
class MemoryConn implements Stream {
  closed = false;
  remoteAddr?: Deno.NetAddr;
  sent = "";
  #inbox: Uint8Array[] = [];
  #waiting: ((n: Uint8Array | null) => void) | undefined;
  /** Bytes the client sends to the server. */
  send(text: string): void {
    const bytes = encoder.encode(text);
    if (this.#waiting) {
      this.#waiting(bytes);
      this.#waiting = undefined;
    } else this.#inbox.push(bytes);
  }
  reads = 0;
  read(p: Uint8Array): Promise<number | null> {
    this.reads++;
    if (this.closed) return Promise.resolve(null);
    const next = this.#inbox.shift();
    const got = next ? Promise.resolve(next) : new Promise<Uint8Array | null>((r) => {
      this.#waiting = r;
    });
    return got.then((b) => {
      if (b === null) return null;
      if (b.length > p.length) this.#inbox.unshift(b.subarray(p.length));
      p.set(b.subarray(0, p.length));
      return Math.min(b.length, p.length);
    });
  }
  write(p: Uint8Array): Promise<number> {
    if (this.closed) return Promise.reject(new Deno.errors.BadResource("closed"));
    this.sent += decoder.decode(p);
    return Promise.resolve(p.length);
  }
  close(): void {
    this.closed = true;
    this.#waiting?.(null);
  }
}

Deno.test("serveHttp() closes a client that sends half a request head after the header timeout", async () => {
  const { clock, timers } = fakeTime();
  const loris = new MemoryConn();
  const server = serveHttp(scriptedListener<Stream>([loris]), ok, {
    name: "test",
    headerTimeoutMs: 10_000,
    timers,
  });
  await clock.tickAsync(0);
  loris.send("GET /metrics HTTP/1.1\r\nHost: x\r\n");
  await clock.tickAsync(5_000);
  loris.send("X-Slow: 1\r\n"); // dribbling more bytes does not extend the deadline
  await clock.tickAsync(4_999);
  assert.equal(loris.closed, false);
  await clock.tickAsync(1);
  assert.equal(loris.closed, true);
  assert.equal(loris.sent, "", "no response to a head that never ended");
  await server.shutdown();
});

Deno.test("serveHttp() closes a keep-alive connection idle past the idle timeout", async () => {
  const { clock, timers } = fakeTime();
  const conn = new MemoryConn();
  const server = serveHttp(scriptedListener<Stream>([conn]), ok, {
    name: "test",
    headerTimeoutMs: 1_000,
    idleTimeoutMs: 30_000,
    timers,
  });
  await clock.tickAsync(0);
  conn.send("GET / HTTP/1.1\r\n\r\n");
  await clock.tickAsync(0);
  assert.match(conn.sent, /^HTTP\/1\.1 200 OK\r\n[^]*connection: keep-alive\r\n\r\nok\n$/);
  // Idle, not a slow head: the longer idle timeout applies.
  await clock.tickAsync(29_999);
  assert.equal(conn.closed, false);
  await clock.tickAsync(1);
  assert.equal(conn.closed, true);
  await server.shutdown();
});

Deno.test("serveHttp() answers a head larger than 16 KiB with 431 and closes", async () => {
  const { clock, timers } = fakeTime();
  const conn = new MemoryConn();
  const server = serveHttp(scriptedListener<Stream>([conn]), ok, { name: "test", timers });
  await clock.tickAsync(0);
  conn.send(`GET / HTTP/1.1\r\nX-Big: ${"a".repeat(20_000)}`);
  await clock.tickAsync(1_000); // read 4 KiB at a time, paced after the second read
  assert.match(conn.sent, /^HTTP\/1\.1 431 /);
  assert.equal(conn.closed, true);
  await server.shutdown();
});

Deno.test("serveHttp() reads a head arriving a byte per packet at most every 50 ms after its second read", async () => {
  const { clock, timers } = fakeTime();
  const conn = new MemoryConn();
  const server = serveHttp(scriptedListener<Stream>([conn]), ok, { name: "test", timers });
  await clock.tickAsync(0);
  const head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  for (const byte of head) conn.send(byte); // each its own read, as packets the kernel keeps apart
  await clock.tickAsync(0);
  assert.equal(conn.reads, 2);
  await clock.tickAsync(50);
  assert.equal(conn.reads, 3);
  await clock.tickAsync(50 * (head.length - 3));
  assert.equal(conn.reads, head.length + 1, "each byte, then the wait for the next request");
  assert.match(conn.sent, /^HTTP\/1\.1 200 OK/);
  await server.shutdown();
});

Deno.test("serveHttp() answers one address's pipelined requests at most 10 a second after a burst of 20", async () => {
  const { clock, timers } = fakeTime();
  const conn = new MemoryConn();
  conn.remoteAddr = { transport: "tcp", hostname: "10.0.0.7", port: 40000 };
  const server = serveHttp(scriptedListener<Stream>([conn]), ok, { name: "test", timers });
  await clock.tickAsync(0);
  conn.send("GET / HTTP/1.1\r\n\r\n".repeat(30));
  const answered = () => conn.sent.match(/HTTP\/1\.1 200 OK/g)?.length ?? 0;
  await clock.tickAsync(0);
  assert.equal(answered(), 20);
  await clock.tickAsync(100);
  assert.equal(answered(), 21);
  await clock.tickAsync(900);
  assert.equal(answered(), 30);
  await server.shutdown();
});

/** Real loopback TCP: a raw client and a few helpers around one server. */
async function withLoopbackServer(
  opts: { headerTimeoutMs?: number; maxConnections?: number },
  fn: (connect: () => Promise<Deno.TcpConn>, server: HttpListener) => Promise<void>,
): Promise<void> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  const server = serveHttp(listener, ok, { name: "test", ...opts });
  const open: Deno.TcpConn[] = [];
  try {
    await fn(async () => {
      const c = await Deno.connect({ hostname: "127.0.0.1", port });
      open.push(c);
      return c;
    }, server);
  } finally {
    for (const c of open) {
      try {
        c.close();
      } catch { /* closed by the test */ }
    }
    await server.shutdown();
  }
}

/** Sends one request on `conn` and reads one response (the server states its length). */
async function roundTrip(conn: Deno.Conn, path = "/"): Promise<string> {
  await conn.write(encoder.encode(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`));
  let got = "";
  const buf = new Uint8Array(4096);
  while (!/\r\n\r\n[^]*$/.test(got) || !complete(got)) {
    const n = await conn.read(buf);
    if (n === null) break;
    got += decoder.decode(buf.subarray(0, n));
  }
  return got;
}

function complete(text: string): boolean {
  const at = text.indexOf("\r\n\r\n");
  const length = Number(/content-length: (\d+)/i.exec(text)?.[1] ?? 0);
  return at >= 0 && text.length - at - 4 >= length;
}

Deno.test("slow-loris clients filling the cap are closed after the header timeout, and then others are served", () =>
  withLoopbackServer({ headerTimeoutMs: 300, maxConnections: 2 }, async (connect) => {
    const lorises = [await connect(), await connect()];
    for (const l of lorises) await l.write(encoder.encode("GET / HTTP/1.1\r\nHost: x\r\n"));
    const closed = lorises.map(readUntilClosed);
    // The cap is full of slow clients: a third is told so at once, not left hanging.
    assert.match(await readUntilClosed(await connect()), /^HTTP\/1\.1 503 /);
    assert.deepEqual(await Promise.all(closed), ["", ""], "closed without a response");
    assert.match(await roundTrip(await connect()), /^HTTP\/1\.1 200 OK/);
  }));

Deno.test("a connection beyond the cap closes the oldest idle keep-alive connection and is served", () =>
  withLoopbackServer({ maxConnections: 2 }, async (connect, server) => {
    const a = await connect(), b = await connect();
    assert.match(await roundTrip(a), /200 OK/);
    assert.match(await roundTrip(b), /200 OK/);
    assert.equal(server.connections, 2);
    // Both wait between requests; a has waited longer and makes room.
    assert.match(await roundTrip(await connect()), /200 OK/);
    assert.equal(await readUntilClosed(a), "", "the oldest idle connection was closed");
    assert.match(await roundTrip(b), /200 OK/);
  }));

Deno.test("a connection beyond the cap is refused with 503 when none is idle, and the busy ones keep working", () =>
  withLoopbackServer({ maxConnections: 2 }, async (connect, server) => {
    const a = await connect(), b = await connect();
    // Each is in the middle of a head: busy, not idle.
    for (const c of [a, b]) await c.write(encoder.encode("GET / HTTP/1.1\r\n"));
    await waitFor(() => server.connections === 2, { message: "both connections accepted" });
    const refused = await readUntilClosed(await connect());
    assert.match(refused, /^HTTP\/1\.1 503 Service Unavailable\r\n[^]*Too many connections/);
    for (const c of [a, b]) {
      await c.write(encoder.encode("Host: x\r\n\r\n"));
      assert.match(await readResponse(c), /200 OK/);
    }
  }));

/** Reads one response whose request was already sent. */
async function readResponse(conn: Deno.Conn): Promise<string> {
  let got = "";
  const buf = new Uint8Array(4096);
  while (!complete(got)) {
    const n = await conn.read(buf);
    if (n === null) break;
    got += decoder.decode(buf.subarray(0, n));
  }
  return got;
}
