import assert from "node:assert/strict";
import { scriptedListener } from "../../tests/helpers/fake_listener.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { waitFor } from "../../tests/helpers/wait.ts";
import { AcceptLoop, type Stream, tcpPeer, writeAll } from "./accept_loop.ts";
import { limitedLogCapture } from "../../tests/helpers/limited_log.ts";

/** A connection that records whether it was closed; reads and writes wait until then. */
class FakeConn implements Stream {
  closed = false;
  readonly #closedSignal = Promise.withResolvers<void>();
  read(): Promise<number | null> {
    return this.#closedSignal.promise.then(() => null);
  }
  write(): Promise<number> {
    return this.#closedSignal.promise.then(() => {
      throw new Deno.errors.BadResource("closed");
    });
  }
  close(): void {
    this.closed = true;
    this.#closedSignal.resolve();
  }
}

Deno.test("AcceptLoop retries a failing accept with backoff instead of ending", async () => {
  const { clock, timers } = fakeTime();
  const listener = scriptedListener([new FakeConn()], 4);
  const served: FakeConn[] = [];
  const loop = new AcceptLoop(listener, {
    name: "test",
    maxConnections: 8,
    backoff: { initialMs: 100, maxMs: 1000 },
    serve: (c) => (served.push(c), c.read().then(() => {})),
    timers,
  });
  await clock.tickAsync(0);
  assert.equal(listener.accepts, 1);
  // 100, 200, 400, 800 ms between the attempts.
  await clock.tickAsync(99);
  assert.equal(listener.accepts, 1);
  await clock.tickAsync(1);
  assert.equal(listener.accepts, 2);
  await clock.tickAsync(200 + 400 + 800);
  assert.equal(listener.accepts, 6);
  assert.equal(served.length, 1, "the connection after the failures is served");
  await loop.close();
});

Deno.test("AcceptLoop reports failing after repeated accept errors, and recovery", async () => {
  const { clock, timers } = fakeTime();
  const listener = scriptedListener([new FakeConn()], 3);
  const changes: boolean[] = [];
  let errors = 0;
  const loop = new AcceptLoop(listener, {
    name: "cni",
    maxConnections: 8,
    failingAfter: 3,
    backoff: { initialMs: 10, maxMs: 10 },
    serve: (c) => c.read().then(() => {}),
    onAcceptError: () => errors++,
    onFailingChange: (f) => changes.push(f),
    timers,
  });
  await clock.tickAsync(0);
  await clock.tickAsync(10);
  assert.equal(loop.failure(), null, "two failures are not yet failing");
  await clock.tickAsync(0);
  assert.equal(errors, 2);
  await clock.tickAsync(10);
  // The third failure: failing until an accept succeeds.
  assert.equal(errors, 3);
  assert.match(loop.failure()!, /cni listener cannot accept connections.*Too many open files/);
  assert.deepEqual(changes, [true]);
  await clock.tickAsync(10);
  assert.equal(loop.failure(), null);
  assert.deepEqual(changes, [true, false]);
  await loop.close();
});

Deno.test("AcceptLoop refuses and closes connections beyond the cap; existing ones stay", async () => {
  const { clock, timers } = fakeTime();
  const conns = [new FakeConn(), new FakeConn(), new FakeConn()];
  const listener = scriptedListener([...conns], 0);
  const refused: FakeConn[] = [];
  const loop = new AcceptLoop(listener, {
    name: "test",
    maxConnections: 2,
    serve: (c) => c.read().then(() => {}),
    refuse: (c) => void refused.push(c),
    timers,
  });
  await clock.tickAsync(0);
  assert.deepEqual(refused, [conns[2]]);
  assert.equal(conns[2].closed, true);
  assert.equal(conns[0].closed || conns[1].closed, false);
  assert.equal(loop.connections, 2);
  await loop.close();
  assert.ok(conns.every((c) => c.closed), "close() closes every connection");
  assert.equal(listener.closed, true);
});

Deno.test("AcceptLoop.close() ends a loop waiting out its backoff", async () => {
  const { clock, timers } = fakeTime();
  const listener = scriptedListener<FakeConn>([], 1);
  const loop = new AcceptLoop(listener, {
    name: "test",
    maxConnections: 1,
    backoff: { initialMs: 60_000, maxMs: 60_000 },
    serve: () => Promise.resolve(),
    timers,
  });
  await clock.tickAsync(0);
  await loop.close();
  assert.equal(listener.accepts, 1);
});

Deno.test("writeAll() closes a connection whose peer stops reading after the deadline", async () => {
  const { clock, timers } = fakeTime();
  const conn = new FakeConn();
  const write = writeAll(conn, new Uint8Array(10), 5000, timers);
  const outcome = write.then(() => "written", (e: Error) => e.message);
  await clock.tickAsync(4999);
  assert.equal(conn.closed, false);
  await clock.tickAsync(1);
  assert.equal(conn.closed, true);
  assert.match(await outcome, /not finished within 5000 ms/);
});

/** A connection from `hostname`, as a Deno.TcpConn names its peer. */
Deno.test("a flood of 5000 connections beyond the cap is 10 log lines, then one summary a minute, and each is counted", async () => {
  using log = limitedLogCapture();
  const { clock, timers, messages } = log;
  const conns = Array.from({ length: 5001 }, () => new FakeConn());
  let capped = 0;
  const loop = new AcceptLoop(scriptedListener(conns, 0), {
    name: "http",
    maxConnections: 1,
    serve: (c) => c.read().then(() => {}),
    onCapped: () => capped++,
    timers,
  });
  await waitFor(() => capped === 5000, { message: "5000 connections refused" });
  assert.equal(messages.length, 10);
  assert.equal(
    messages[0],
    '"http": "connection refused" at "the listener\'s cap" (1 connections open at most, ' +
      '"no limit" per peer)',
  );
  await clock.tickAsync(60_000);
  assert.equal(messages.length, 11);
  assert.match(
    messages[10],
    /^And 4990 more "ConnectionCapped\(http\)" lines .* in the last 60 s .*the last: "connection refused at the listener's cap"$/,
  );
  await loop.close();
});

class PeerConn extends FakeConn {
  readonly remoteAddr: Deno.NetAddr;
  constructor(hostname: string) {
    super();
    this.remoteAddr = { transport: "tcp", hostname, port: 40000 };
  }
}

/** A loop over `conns` whose served connections go idle when `idle` says so, recording refusals. */
function peerLoop(conns: PeerConn[], idle: (c: PeerConn) => boolean, maxConnections = 8) {
  const refused: [string, string][] = [];
  const loop = new AcceptLoop<PeerConn>(scriptedListener(conns), {
    name: "test",
    maxConnections,
    maxPerPeer: 2,
    peer: tcpPeer,
    serve: (c, slot) => {
      slot.idle(idle(c));
      return c.read().then(() => {});
    },
    refuse: (c, cap) => void refused.push([c.remoteAddr.hostname, cap]),
  });
  return { loop, refused };
}

Deno.test("AcceptLoop refuses a peer's connection beyond its cap when none of its own is idle, and serves other peers", async () => {
  const a = [new PeerConn("10.0.0.1"), new PeerConn("10.0.0.1"), new PeerConn("10.0.0.1")];
  const b = new PeerConn("10.0.0.2");
  // b's connection is idle, but a's third may not close another peer's connection.
  const { loop, refused } = peerLoop([...a, b], (c) => c === b);
  await waitFor(() => loop.connections === 3, { message: "a's two and b's one served" });
  assert.deepEqual(refused, [["10.0.0.1", "peer"]]);
  assert.deepEqual([a[0].closed, a[1].closed, a[2].closed, b.closed], [false, false, true, false]);
  await loop.close();
});

Deno.test("AcceptLoop closes a peer's own oldest idle connection to serve its next one", async () => {
  const a = [new PeerConn("10.0.0.1"), new PeerConn("10.0.0.1"), new PeerConn("10.0.0.1")];
  const { loop, refused } = peerLoop(a, (c) => c !== a[2]);
  await waitFor(() => a[0].closed, { message: "a's oldest idle connection closed" });
  assert.deepEqual(refused, []);
  assert.deepEqual([a[1].closed, a[2].closed], [false, false]);
  assert.equal(loop.connections, 2);
  await loop.close();
});

Deno.test("AcceptLoop at its cap closes the oldest idle connection of any peer, and refuses when none is idle", async () => {
  const conns = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"].map((h) => new PeerConn(h));
  // Cap 2: the first is idle and makes room for the third; then both open ones are busy.
  const { loop, refused } = peerLoop(conns, (c) => c === conns[0], 2);
  await waitFor(() => refused.length === 1, { message: "the fourth refused" });
  assert.deepEqual(refused, [["10.0.0.4", "connections"]]);
  assert.deepEqual(conns.map((c) => c.closed), [true, false, false, true]);
  assert.equal(loop.connections, 2);
  await loop.close();
});
