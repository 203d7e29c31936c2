/**
 * The CNI server's socket (where it is made, with which modes, what it replaces and leaves) and
 * its answers to requests, good and bad. Its limits against hostile clients are in
 * server_limits_test.ts, the attachment table behind DEL and GC in server_attachments_test.ts.
 */
import assert from "node:assert/strict";
import { refusedAtEachLayer, unprivilegedUnavailable } from "../../tests/helpers/unprivileged.ts";
import { skipIf } from "../../tests/helpers/skip.ts";
import { startCniServer } from "./server.ts";
import {
  attachment,
  cniServer,
  exchange,
  FakeAgent,
  ref,
  request,
  tempDir,
} from "./_server_fixture.ts";

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
  ignore: skipIf(await unprivilegedUnavailable()),
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
  const bad: [string, string][] = [
    ["{not json\n", "Request is not valid JSON"],
    ["[]\n", "Request is not a JSON object"],
    [
      JSON.stringify({ v: 2, id: "x", op: "add" }) + "\n",
      "Unsupported protocol version 2: this agent speaks 1",
    ],
    [request({ op: "explode" }), 'Unknown op "explode": expected add, check, del or gc'],
    [request({ op: "add", ref }), "attachment must be an object"],
    [
      request({ op: "add", ref, attachment: { ...attachment, ips: ["not-an-ip"] } }),
      'Invalid IP address: "not-an-ip"',
    ],
    [
      request({ op: "add", ref, attachment: { ...attachment, uid: "" } }),
      "attachment.uid must be a non-empty string of at most 1024 characters",
    ],
    [
      request({ op: "add", ref, attachment: { ...attachment, network: "b", networkId: 0 } }),
      "attachment.networkId must be an integer 1..65535: 0",
    ],
    [
      request({ op: "del", ref: { containerId: "c1" } }),
      "ref.ifname must be a non-empty string of at most 1024 characters",
    ],
    [request({ op: "gc", valid: "all" }), "valid must be a list of attachments"],
  ];
  const replies = await exchange(
    cni.path,
    bad.map(([line]) => line).join("") + request({ op: "add", ref, attachment }),
    11,
  );
  assert.equal(replies.length, 11);
  assert.deepEqual(
    replies.slice(0, 10).map((l) => JSON.parse(l)).map((r) => [r.ok, r.error]),
    bad.map(([, why]) => [false, why]),
  );
  assert.equal(JSON.parse(replies[0]).id, null);
  assert.equal(JSON.parse(replies[5]).id, "r1");
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
