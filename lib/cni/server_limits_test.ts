/**
 * The CNI server against clients that misbehave: over-long or unfinished lines, clients that leave
 * or stop reading, too many connections, an agent that never answers, accept errors.
 */
import assert from "node:assert/strict";
import { readUntilClosed, scriptedListener } from "../../tests/helpers/fake_listener.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { type CniHandler, serveCni } from "./server.ts";
import {
  attachment,
  cniServer,
  exchange,
  FakeAgent,
  ref,
  request,
  StalledReader,
} from "./_server_fixture.ts";

Deno.test("the server closes a connection that sends an over-long line", async () => {
  await using cni = await cniServer();
  const replies = await exchange(cni.path, "x".repeat(200 * 1024), 2);
  assert.equal(replies.length, 1);
  assert.match(JSON.parse(replies[0]).error, /longer than/);
});

Deno.test("the server survives a client that leaves before its reply", async () => {
  const started = Promise.withResolvers<void>();
  const release = Promise.withResolvers<void>();
  const handler: CniHandler = {
    registerAttachment: async () => {
      started.resolve();
      await release.promise;
    },
    removeAttachment: () => {},
  };
  await using cni = await cniServer(handler);
  try {
    const conn = await Deno.connect({ transport: "unix", path: cni.path });
    await conn.write(new TextEncoder().encode(request({ op: "add", ref, attachment })));
    await started.promise;
    conn.close();
    release.resolve();
    const [line] = await exchange(cni.path, request({ op: "del", ref, uid: "u1" }));
    assert.equal(JSON.parse(line).ok, true);
  } finally {
    // Released before the server closes, which waits for the handler.
    release.resolve();
  }
});

Deno.test("the server refuses connections beyond its limit with retry", async () => {
  await using cni = await cniServer(new FakeAgent(), { maxConnections: 1 });
  using held = await Deno.connect({ transport: "unix", path: cni.path });
  // The held connection is served once the server has answered on it.
  await held.write(new TextEncoder().encode(request({ op: "del", ref })));
  await held.read(new Uint8Array(1024));
  const [line] = await exchange(cni.path, "");
  assert.equal(JSON.parse(line).retry, true);
});

Deno.test("a client that never finishes its request line is closed after the line deadline, and others are served meanwhile", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent, { lineMs: 300, maxConnections: 2 });
  using slow = await Deno.connect({ transport: "unix", path: cni.path });
  await slow.write(new TextEncoder().encode('{"v":1,"id":"slow","op":'));
  const closed = readUntilClosed(slow);
  const [line] = await exchange(cni.path, request({ op: "add", ref, attachment }));
  assert.equal(JSON.parse(line).ok, true, "served while the slow client waits");
  assert.equal(await closed, "", "closed without a reply");
});

Deno.test("the server tells the plugin to retry when the agent does not answer within the request deadline", async () => {
  const never: CniHandler = {
    registerAttachment: () => new Promise(() => {}),
    removeAttachment: () => {},
  };
  await using cni = await cniServer(never, { requestMs: 50 });
  const [line] = await exchange(cni.path, request({ op: "add", ref, attachment }));
  assert.deepEqual(JSON.parse(line), {
    v: 1,
    id: "r1",
    ok: false,
    error: "The agent did not answer within 50 ms",
    retry: true,
  });
});

Deno.test("serveCni() closes a connection whose client stops reading replies after the write deadline", async () => {
  const { clock, timers } = fakeTime();
  const conn = new StalledReader(request({ op: "add", ref, attachment }));
  const served = serveCni(scriptedListener([conn]), new FakeAgent(), { writeMs: 5000, timers });
  await clock.tickAsync(4999);
  assert.equal(conn.closed, false);
  await clock.tickAsync(1);
  assert.equal(conn.closed, true);
  await served.close();
});

Deno.test("serveCni() keeps accepting after accept errors and says it is failing while they last", async () => {
  const { clock, timers } = fakeTime();
  const agent = new FakeAgent();
  const conn = new StalledReader(request({ op: "add", ref, attachment }));
  const listener = scriptedListener([conn], 5);
  const changes: boolean[] = [];
  const served = serveCni(listener, agent, {
    timers,
    onFailingChange: (failing) => changes.push(failing),
  });
  await clock.tickAsync(0);
  assert.equal(served.failure(), null);
  await clock.tickAsync(50 + 100);
  assert.match(served.failure() ?? "", /cni listener cannot accept connections/);
  await clock.tickAsync(200 + 400 + 800);
  assert.equal(listener.accepts, 7, "5 failed, 1 accepted, 1 waiting");
  assert.equal(served.failure(), null);
  assert.deepEqual(changes, [true, false]);
  assert.deepEqual(agent.added, [attachment], "the connection after the errors is served");
  await served.close();
});
