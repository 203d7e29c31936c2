import assert from "node:assert/strict";
import type { Attachment, AttachmentRef } from "./protocol.ts";
import type { Stream } from "../accept_loop.ts";
import { readUntilClosed, scriptedListener } from "../../tests/helpers/fake_listener.ts";
import { fakeTime } from "../../tests/helpers/fake_time.ts";
import { refusedAtEachLayer, unprivilegedUnavailable } from "../../tests/helpers/unprivileged.ts";
import {
  Attachments,
  type CniHandler,
  type CniServer,
  type CniServerOptions,
  serveCni,
  startCniServer,
} from "./server.ts";

class FakeAgent implements CniHandler {
  added: Attachment[] = [];
  removed: string[] = [];
  removedRefs: AttachmentRef[] = [];
  fail?: Error;
  registerAttachment(a: Attachment): Promise<void> {
    if (this.fail) return Promise.reject(this.fail);
    this.added.push(a);
    return Promise.resolve();
  }
  removeAttachment(uid: string, ref: AttachmentRef): void {
    this.removed.push(uid);
    this.removedRefs.push(ref);
  }
}

/** A fresh directory for one test, removed with all it holds when disposed. */
async function tempDir(): Promise<AsyncDisposable & { path: string }> {
  const path = await Deno.makeTempDir({ prefix: "lace-cni-" });
  return { path, [Symbol.asyncDispose]: () => Deno.remove(path, { recursive: true }) };
}

/**
 * A server for `handler` on `cni.sock` in a fresh directory; disposing it
 * closes the server, then removes the directory, so a failing test leaks neither.
 */
async function cniServer(
  handler: CniHandler = new FakeAgent(),
  options: CniServerOptions = {},
): Promise<AsyncDisposable & { path: string; server: CniServer }> {
  const dir = await tempDir();
  const path = `${dir.path}/cni.sock`;
  try {
    const server = await startCniServer(path, handler, options);
    return {
      path,
      server,
      async [Symbol.asyncDispose]() {
        await server.close();
        await dir[Symbol.asyncDispose]();
      },
    };
  } catch (e) {
    await dir[Symbol.asyncDispose]();
    throw e;
  }
}

/** A raw client: writes `text`, then reads `lines` reply lines (or until the server closes). */
async function exchange(path: string, text: string, lines = 1): Promise<string[]> {
  const conn = await Deno.connect({ transport: "unix", path });
  try {
    await conn.write(new TextEncoder().encode(text));
    let got = "";
    const buf = new Uint8Array(4096);
    while (got.split("\n").length - 1 < lines) {
      const n = await conn.read(buf).catch(() => null);
      if (n === null) break;
      got += new TextDecoder().decode(buf.subarray(0, n));
    }
    return got.split("\n").filter((l) => l !== "").map((l) => l);
  } finally {
    conn.close();
  }
}

const ref = { containerId: "c1", ifname: "eth0" };
const attachment = { namespace: "ns", name: "web", uid: "u1", ips: ["10.70.0.5"] };
function request(extra: Record<string, unknown>): string {
  return JSON.stringify({ v: 1, id: "r1", ...extra }) + "\n";
}

Deno.test("startCniServer() creates a missing parent directory 0700 and the socket 0600", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/run/lace/cni.sock`;
  const server = await startCniServer(path, new FakeAgent());
  try {
    assert.ok(Deno.lstatSync(path).isSocket);
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
    assert.equal(Deno.statSync(`${dir.path}/run/lace`).mode! & 0o777, 0o700);
    assert.deepEqual([...Deno.readDirSync(`${dir.path}/run/lace`)].map((e) => e.name), [
      "cni.sock",
    ]);
  } finally {
    await server.close();
  }
});

Deno.test({
  name:
    "startCniServer()'s socket refuses an unprivileged user with EACCES, at its directory and at the socket",
  ignore: (await unprivilegedUnavailable()) !== undefined,
}, async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/run/lace/cni.sock`;
  const server = await startCniServer(path, new FakeAgent());
  try {
    await refusedAtEachLayer(path, dir.path, (layer, result) => {
      assert.equal(result.connected, false, `nobody connected through ${layer}`);
      assert.match(result.why, /Permission denied/, `refused by ${layer} for another reason`);
    });
    // The positive control: root still connects.
    (await Deno.connect({ transport: "unix", path })).close();
  } finally {
    await server.close();
  }
});

Deno.test("startCniServer() replaces a stale socket file", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/cni.sock`;
  const stale = Deno.listen({ transport: "unix", path: `${dir.path}/old.sock` });
  Deno.renameSync(`${dir.path}/old.sock`, path);
  stale.close();
  const agent = new FakeAgent();
  const server = await startCniServer(path, agent);
  try {
    const [line] = await exchange(path, request({ op: "add", ref, attachment }));
    assert.equal(JSON.parse(line).ok, true);
    assert.equal(agent.added.length, 1);
  } finally {
    await server.close();
  }
});

Deno.test("startCniServer() refuses a path that is not a socket", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/cni.sock`;
  Deno.writeTextFileSync(path, "keep me");
  await assert.rejects(() => startCniServer(path, new FakeAgent()), /exists and is not a socket/);
  assert.equal(Deno.readTextFileSync(path), "keep me");
});

Deno.test("close() removes the socket, but not one a newer server put there", async () => {
  await using dir = await tempDir();
  const path = `${dir.path}/cni.sock`;
  const first = await startCniServer(path, new FakeAgent());
  await first.close();
  assert.throws(() => Deno.lstatSync(path), Deno.errors.NotFound);
  const old = await startCniServer(path, new FakeAgent());
  const agent = new FakeAgent();
  const newer = await startCniServer(path, agent);
  await old.close();
  await old.close();
  const [line] = await exchange(path, request({ op: "add", ref, attachment }));
  assert.equal(JSON.parse(line).ok, true);
  assert.equal(agent.added.length, 1);
  await newer.close();
});

Deno.test("the server answers bad requests with errors and keeps serving", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  const bad = [
    "{not json\n",
    "[]\n",
    JSON.stringify({ v: 2, id: "x", op: "add" }) + "\n",
    request({ op: "explode" }),
    request({ op: "add", ref }),
    request({ op: "add", ref, attachment: { ...attachment, ips: ["not-an-ip"] } }),
    request({ op: "add", ref, attachment: { ...attachment, uid: "" } }),
    request({ op: "add", ref, attachment: { ...attachment, network: "b", networkId: 0 } }),
    request({ op: "del", ref: { containerId: "c1" } }),
    request({ op: "gc", valid: "all" }),
  ];
  const replies = await exchange(
    cni.path,
    bad.join("") + request({ op: "add", ref, attachment }),
    11,
  );
  assert.equal(replies.length, 11);
  for (const r of replies.slice(0, 10).map((l) => JSON.parse(l))) {
    assert.equal(r.ok, false);
    assert.equal(typeof r.error, "string");
  }
  assert.equal(JSON.parse(replies[0]).id, null);
  assert.equal(JSON.parse(replies[5]).id, "r1");
  assert.match(JSON.parse(replies[5]).error, /not-an-ip/);
  assert.equal(JSON.parse(replies[10]).ok, true);
  assert.deepEqual(agent.added, [attachment]);
});

Deno.test("the server canonicalises addresses before calling the agent", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  const a = { ...attachment, ips: ["FD70:0:0::5", "::ffff:10.70.0.5"] };
  await exchange(cni.path, request({ op: "add", ref, attachment: a }));
  assert.deepEqual(agent.added[0].ips, ["fd70::5", "10.70.0.5"]);
});

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

Deno.test("the server reports a failing agent, with retry when the agent asks for it", async () => {
  const agent = new FakeAgent();
  agent.fail = Object.assign(new Error("Probe map is full"), { retry: true });
  await using cni = await cniServer(agent);
  const [line] = await exchange(cni.path, request({ op: "add", ref, attachment }));
  assert.deepEqual(JSON.parse(line), {
    v: 1,
    id: "r1",
    ok: false,
    error: "Probe map is full",
    retry: true,
  });
});

Deno.test("CHECK without a check handler is an error reply", async () => {
  await using cni = await cniServer();
  const [line] = await exchange(cni.path, request({ op: "check", ref, attachment }));
  assert.match(JSON.parse(line).error, /cannot check/);
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

Deno.test("DEL removes the pod by uid, or by the sandbox that added it", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  await exchange(cni.path, request({ op: "add", ref, attachment }));
  await exchange(cni.path, request({ op: "del", ref }));
  await exchange(cni.path, request({ op: "del", ref }));
  await exchange(
    cni.path,
    request({ op: "del", ref: { containerId: "c9", ifname: "eth0" }, uid: "u9" }),
  );
  assert.deepEqual(agent.removed, ["u1", "u9"]);
});

Deno.test("DEL of a pod's second interface tells the agent which interface goes", async () => {
  const agent = new FakeAgent();
  await using cni = await cniServer(agent);
  const net1 = { containerId: ref.containerId, ifname: "net1" };
  await exchange(cni.path, request({ op: "add", ref, attachment }));
  await exchange(cni.path, request({ op: "add", ref: net1, attachment }));
  await exchange(cni.path, request({ op: "del", ref: net1 }));
  assert.deepEqual(agent.removed, ["u1"]);
  assert.deepEqual(agent.removedRefs, [net1]);
});

Deno.test("Attachments ignores a late DEL of a pod's replaced sandbox", () => {
  const table = new Attachments();
  table.add({ containerId: "old", ifname: "eth0" }, "u1");
  table.add({ containerId: "new", ifname: "eth0" }, "u1");
  assert.equal(table.uidToRemove({ containerId: "old", ifname: "eth0" }, "u1"), null);
  table.delete({ containerId: "old", ifname: "eth0" });
  assert.equal(table.uidToRemove({ containerId: "new", ifname: "eth0" }, "u1"), "u1");
  assert.equal(table.uidToRemove({ containerId: "x", ifname: "eth0" }, "u2"), "u2");
  assert.equal(table.uidToRemove({ containerId: "x", ifname: "eth0" }, undefined), null);
});

Deno.test("Attachments.collect() returns the pods of attachments the runtime no longer has", () => {
  const table = new Attachments();
  table.add({ containerId: "a", ifname: "eth0" }, "u1");
  table.add({ containerId: "b", ifname: "eth0" }, "u2");
  table.add({ containerId: "old", ifname: "eth0" }, "u3");
  table.add({ containerId: "c", ifname: "eth0" }, "u3");
  const gone = table.collect([{ containerId: "a", ifname: "eth0" }, {
    containerId: "c",
    ifname: "eth0",
  }]);
  assert.deepEqual(gone, [{ uid: "u2", ref: { containerId: "b", ifname: "eth0" } }]);
  assert.equal(table.size, 2);
});

Deno.test("Attachments: a DEL of one interface of a pod's sandbox removes that interface only", () => {
  const table = new Attachments();
  const eth0 = { containerId: "s1", ifname: "eth0" };
  const net1 = { containerId: "s1", ifname: "net1" };
  table.add(eth0, "u1");
  table.add(net1, "u1");
  assert.equal(table.uidToRemove(net1, "u1"), "u1");
  table.delete(net1);
  assert.equal(table.size, 1);
  assert.equal(table.uidToRemove(eth0, undefined), "u1", "eth0 still registered");
  assert.deepEqual(table.collect([]), [{ uid: "u1", ref: eth0 }]);
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

/** A client that sends `text` once and then never reads: every write waits until closed. */
class StalledReader implements Stream {
  closed = false;
  #sent = false;
  readonly #close = Promise.withResolvers<void>();
  constructor(readonly text: string) {}
  read(p: Uint8Array): Promise<number | null> {
    if (this.#sent) return this.#close.promise.then(() => null);
    this.#sent = true;
    const bytes = new TextEncoder().encode(this.text);
    p.set(bytes);
    return Promise.resolve(bytes.length);
  }
  write(): Promise<number> {
    return this.#close.promise.then(() => Promise.reject(new Error("closed")));
  }
  close(): void {
    this.closed = true;
    this.#close.resolve();
  }
}

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
