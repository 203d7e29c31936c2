import assert from "node:assert/strict";
import { cniPlugin } from "./plugin.ts";
import { AttachmentRefusedError } from "./protocol.ts";
import { env, FakeAgent, prevResult, stdin, withAgent } from "./_plugin_fixture.ts";

Deno.test("ADD registers the pod with the agent and prints prevResult unchanged", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.deepEqual(out.log, []);
    assert.deepEqual(agent.added, [{
      namespace: "ns",
      name: "web",
      uid: "u1",
      ips: ["10.70.0.5"],
      network: "blue",
      networkId: 7,
    }]);
  });
});

Deno.test("ADD without network keys leaves the network to the pod annotations", async () => {
  await withAgent(async (socket, agent) => {
    const conf = JSON.parse(stdin(socket));
    delete conf.network;
    delete conf.networkId;
    const out = await cniPlugin(env("ADD"), JSON.stringify(conf));
    assert.equal(out.code, 0);
    assert.equal(agent.added[0].network, undefined);
    assert.equal("networkId" in agent.added[0], false);
  });
});

Deno.test("ADD with a malformed network name fails closed with code 7 and registers nothing", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(env("ADD"), stdin(socket, { network: "blue\u200b" }));
    assert.equal(out.code, 1);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 7);
    assert.match(result.msg, /^"network" must be 1\.\.253 printable characters/);
    assert.deepEqual(agent.added, []);
  });
});

Deno.test("ADD succeeds within the timeout when the agent is slow", async () => {
  const agent = new FakeAgent();
  const gate = Promise.withResolvers<void>();
  agent.delay = gate.promise;
  await withAgent(async (socket) => {
    const started = performance.now();
    const out = await cniPlugin(env("ADD"), stdin(socket, { timeout: "100ms" }));
    const took = performance.now() - started;
    gate.resolve();
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.ok(took >= 95 && took < 1000, `took ${took} ms`);
    assert.match(out.log.join("\n"), /did not answer within 100ms/);
  }, agent);
});

Deno.test("ADD succeeds when the agent is down", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  try {
    const out = await cniPlugin(env("ADD"), stdin(`${dir}/missing.sock`));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /Cannot connect to .*missing\.sock/);
    assert.match(out.log.join("\n"), /pod watch registers its targets/);
    // It looked for stale entries at the pod's address (the purge loaded by its path): none here.
    assert.match(out.log.join("\n"), /cannot remove .* no pin path "\/nonexistent\/lace-pins"/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ADD succeeds when only a stale socket file is left", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-cni-" });
  try {
    const listener = Deno.listen({ transport: "unix", path: `${dir}/tmp.sock` });
    Deno.renameSync(`${dir}/tmp.sock`, `${dir}/cni.sock`);
    listener.close();
    const out = await cniPlugin(env("ADD"), stdin(`${dir}/cni.sock`));
    assert.equal(out.code, 0);
    assert.match(out.log.join("\n"), /Cannot connect/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ADD succeeds and logs when the agent replies with an error", async () => {
  const agent = new FakeAgent();
  agent.error = new Error("Writing probe targets failed: map full");
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /refused the targets: Writing probe targets failed/);
  }, agent);
});

Deno.test("ADD fails with code 101 naming the reason when the agent refuses the address", async () => {
  const agent = new FakeAgent();
  agent.error = new AttachmentRefusedError(
    "Address 10.70.0.5 is already used on this node by a pod of another network",
  );
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket));
    assert.equal(out.code, 1);
    const result = JSON.parse(out.stdout);
    assert.equal(result.code, 101);
    assert.match(
      result.msg,
      /refused the attachment of pod ns\/web: Address 10\.70\.0\.5 is already used/,
    );
  }, agent);
});

Deno.test("ADD without the pod's uid in CNI_ARGS passes through without calling the agent", async () => {
  await withAgent(async (socket, agent) => {
    const out = await cniPlugin(
      env("ADD", { CNI_ARGS: "K8S_POD_NAMESPACE=ns;K8S_POD_NAME=web" }),
      stdin(socket),
    );
    assert.equal(out.code, 0);
    assert.deepEqual(JSON.parse(out.stdout), prevResult);
    assert.match(out.log.join("\n"), /no K8S_POD_UID/);
    assert.equal(agent.added.length, 0);
  });
});

Deno.test("ADD converts prevResult when its version differs from the configuration's", async () => {
  await withAgent(async (socket) => {
    const out = await cniPlugin(env("ADD"), stdin(socket, { cniVersion: "0.4.0" }));
    assert.equal(out.code, 0);
    const result = JSON.parse(out.stdout);
    assert.equal(result.cniVersion, "0.4.0");
    assert.equal(result.ips[0].version, "4");
  });
});

Deno.test("ADD without prevResult is an invalid configuration (code 7)", async () => {
  const out = await cniPlugin(env("ADD"), stdin("/nonexistent.sock", { prevResult: undefined }));
  assert.equal(out.code, 1);
  const result = JSON.parse(out.stdout);
  assert.equal(result.code, 7);
  assert.equal(result.cniVersion, "1.0.0");
  assert.match(result.msg, /must be chained/);
});
