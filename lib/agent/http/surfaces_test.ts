import assert from "node:assert/strict";
import {
  handleRequest,
  listenAddress,
  sharedFor,
  startHealthServer,
  startHttpServer,
  startLocalServer,
  type StatusProvider,
  type Surface,
} from "./surfaces.ts";
import { getFromAgent } from "../../agent_api/client.ts";
import { manyTargets } from "./_targets_fixture.ts";
import {
  refusedAtEachLayer,
  unprivilegedUnavailable,
} from "../../../tests/helpers/unprivileged.ts";
import { probeOnce } from "../../../tests/helpers/http_flood.ts";
import { waitFor } from "../../../tests/helpers/wait.ts";
import { skipIf } from "../../../tests/helpers/skip.ts";

function provider(ready: boolean): StatusProvider {
  return {
    readiness: () => ({
      ready,
      reasons: ready ? [] : ["programs not attached to the kubelet cgroup"],
    }),
    targets: () => [{ family: "ipv4", address: "10.0.0.1", port: 80, networkId: 1, mark: 0x11000 }],
    metricsText: () => Promise.resolve("lace_up 1\n"),
    metricsContentType: "text/plain; version=0.0.4",
  };
}

const get = (path: string, p: StatusProvider, method = "GET", surface: Surface = "local") =>
  handleRequest(new Request(`http://x${path}`, { method }), p, surface);

Deno.test("/readyz answers 503 with the reasons until ready, then 200", async () => {
  const notReady = await get("/readyz", provider(false));
  assert.equal(notReady.status, 503);
  assert.match(await notReady.text(), /not ready: programs not attached/);
  const ready = await get("/readyz", provider(true));
  assert.equal(ready.status, 200);
  assert.equal(await ready.text(), "ok\n");
});

Deno.test("/healthz, /metrics and /targets serve their content", async () => {
  assert.equal((await get("/healthz", provider(false))).status, 200);
  const metrics = await get("/metrics", provider(true));
  assert.equal(metrics.headers.get("content-type"), "text/plain; version=0.0.4");
  assert.equal(await metrics.text(), "lace_up 1\n");
  const targets = await (await get("/targets", provider(true))).json();
  assert.deepEqual(targets[0].address, "10.0.0.1");
});

Deno.test("the node surface answers /targets with 404 and still serves metrics and health", async () => {
  const refused = await get("/targets", provider(true), "GET", "node");
  assert.equal(refused.status, 404);
  assert.equal(
    await refused.text(),
    "Not found: try /metrics, /healthz or /readyz (the agent's view is on its local socket)\n",
  );
  assert.equal((await get("/metrics", provider(true), "GET", "node")).status, 200);
  assert.equal((await get("/healthz", provider(true), "GET", "node")).status, 200);
  assert.equal((await get("/readyz", provider(true), "GET", "node")).status, 200);
});

Deno.test("/addresses, which names the pods and networks sharing an address, is served on the local surface only", async () => {
  const p: StatusProvider = {
    ...provider(true),
    addresses: () => ({
      sharing: "exclusive",
      addresses: [{
        family: "ipv4",
        address: "10.0.0.1",
        holder: "green/v",
        holderNetwork: "green",
        later: [{ pod: "red/a", network: "red" }],
        holderWithdrawn: false,
      }],
    }),
  };
  const local = await (await get("/addresses", p)).json();
  assert.equal(local.addresses[0].holder, "green/v");
  for (const surface of ["node", "health"] as const) {
    const res = await get("/addresses", p, "GET", surface);
    assert.equal(res.status, 404, surface);
    const body = await res.text();
    assert.match(body, /^Not found: try .*\/readyz\b/, surface);
    assert.doesNotMatch(body, /green|red|10\.0\.0\.1/);
  }
});

Deno.test("/chaining, the CNI chaining's last pass, is served on the local surface only, once it runs", async () => {
  const p: StatusProvider = {
    ...provider(true),
    chaining: () => ({
      mode: "auto",
      dir: "/etc/cni/net.d",
      runtime: { mode: "auto", runtime: "crio", version: "cri-o://1.33.2" },
      chained: [],
      problems: [{ file: "10-x.conflist", reason: "failed", message: "EPERM" }],
    }),
  };
  const local = await (await get("/chaining", p)).json();
  assert.deepStrictEqual([local.runtime.runtime, local.problems[0].reason], ["crio", "failed"]);
  for (const surface of ["node", "health"] as const) {
    assert.equal((await get("/chaining", p, "GET", surface)).status, 404, surface);
  }
  const none = await get("/chaining", { ...provider(true), chaining: () => undefined });
  assert.equal(none.status, 404);
  await none.body?.cancel();
});

Deno.test("the health surface serves /healthz and /readyz only", async () => {
  assert.equal((await get("/healthz", provider(true), "GET", "health")).status, 200);
  const notReady = await get("/readyz", provider(false), "GET", "health");
  assert.equal(notReady.status, 503);
  assert.match(await notReady.text(), /not ready: programs not attached/);
  for (const path of ["/metrics", "/targets", "/unmatched"]) {
    const res = await get(path, provider(true), "GET", "health");
    assert.equal(res.status, 404, path);
    assert.equal(
      await res.text(),
      "Not found: try /healthz or /readyz (metrics are on --metrics-addr)\n",
      path,
    );
  }
});

Deno.test("startHealthServer() on loopback serves health, and a flood of silent connections closes its own, not the kubelet's probe", async () => {
  const server = startHealthServer("127.0.0.1:0", provider(true));
  const [hostname, port] = [server.addr.split(":")[0], Number(server.addr.split(":")[1])];
  const silent: Deno.TcpConn[] = [];
  try {
    // A local user opens twice the cap and sends nothing: each new one closes the oldest.
    for (let i = 0; i < 32; i++) silent.push(await Deno.connect({ hostname, port }));
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`http://${server.addr}/healthz`);
      assert.equal(res.status, 200);
      assert.equal(await res.text(), "ok\n");
    }
  } finally {
    for (const c of silent) c.close();
    await server.shutdown();
  }
});

Deno.test("startHttpServer() on loopback refuses /targets and serves metrics and health", async () => {
  const server = startHttpServer("127.0.0.1:0", provider(true));
  try {
    const res = await fetch(`http://${server.addr}/targets`);
    assert.equal(res.status, 404);
    assert.match(await res.text(), /^Not found: .*the agent's view is on its local socket/);
    const metrics = await fetch(`http://${server.addr}/metrics`);
    assert.equal(await metrics.text(), "lace_up 1\n");
    assert.equal(await (await fetch(`http://${server.addr}/readyz`)).text(), "ok\n");
  } finally {
    await server.shutdown();
  }
});

Deno.test("startLocalServer() serves /targets on a socket only root can open, in a 0700 directory", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-local-" });
  const path = `${dir}/run/agent.sock`;
  const server = await startLocalServer(path, provider(true));
  try {
    assert.equal(Deno.statSync(path).mode! & 0o777, 0o600);
    assert.equal(Deno.statSync(`${dir}/run`).mode! & 0o777, 0o700);
    const res = await getFromAgent(path, "/targets", 2000);
    assert.equal(res.status, 200);
    assert.equal(JSON.parse(res.body)[0].address, "10.0.0.1");
    assert.equal((await getFromAgent(path, "/healthz", 2000)).status, 200);
  } finally {
    await server.shutdown();
    assert.throws(() => Deno.lstatSync(path), Deno.errors.NotFound, "the socket is removed");
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "startLocalServer()'s socket refuses an unprivileged user with EACCES, at its directory and at the socket",
  ignore: skipIf(await unprivilegedUnavailable()),
}, async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-local-" });
  const path = `${dir}/run/agent.sock`;
  const server = await startLocalServer(path, provider(true));
  try {
    await refusedAtEachLayer(path, dir, (layer, result) => {
      assert.equal(result.connected, false, `nobody connected through ${layer}`);
      assert.match(result.why, /Permission denied/, `refused by ${layer} for another reason`);
    });
    // The positive control: root still connects.
    assert.equal((await getFromAgent(path, "/healthz", 2000)).status, 200);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("unknown paths are 404 and writes are 405", async () => {
  assert.equal((await get("/nope", provider(true))).status, 404);
  assert.equal((await get("/metrics", provider(true), "POST")).status, 405);
});

Deno.test("listenAddress() splits IPv4, names and bracketed IPv6, and refuses a missing or too large port", () => {
  assert.deepEqual(listenAddress("127.0.0.1:9808"), { hostname: "127.0.0.1", port: 9808 });
  assert.deepEqual(listenAddress("[::1]:80"), { hostname: "::1", port: 80 });
  assert.deepEqual(listenAddress("localhost:1"), { hostname: "localhost", port: 1 });
  assert.throws(() => listenAddress("9808"), new TypeError(`Address must be host:port: "9808"`));
  assert.throws(() => listenAddress("h:70000"), new RangeError(`Port out of range: "h:70000"`));
});

Deno.test("a /targets answer of many chunks arrives whole on a kept-alive socket connection", async () => {
  const dir = await Deno.makeTempDir({ prefix: "lace-local-" });
  const path = `${dir}/agent.sock`;
  const targets = manyTargets(5000);
  const server = await startLocalServer(path, { ...provider(true), targets: () => targets });
  try {
    for (let i = 0; i < 2; i++) {
      const res = await getFromAgent(path, "/targets", 5000);
      assert.equal(res.status, 200);
      assert.deepEqual(JSON.parse(res.body), targets);
    }
    assert.equal((await getFromAgent(path, "/healthz", 2000)).status, 200);
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a health probe on loopback is answered while a long /targets is still being written", async () => {
  // Each target costs 0.4 ms of work: 500 keep the one thread busy 200 ms in all, which the
  // answer must cut into slices with the event loop (sockets too, not only timers) run between.
  // 50 KB of text: the socket takes every write at once, so no write waits for the reader.
  let begun = false, ended = false;
  function* slowTargets() {
    begun = true;
    for (const t of manyTargets(500)) {
      for (const until = performance.now() + 0.4; performance.now() < until;) { /* work */ }
      yield t;
    }
    ended = true;
  }
  const dir = await Deno.makeTempDir({ prefix: "lace-local-" });
  const path = `${dir}/agent.sock`;
  const local = await startLocalServer(path, { ...provider(true), targets: slowTargets });
  const health = startHealthServer("127.0.0.1:0", provider(true));
  try {
    const transfer = getFromAgent(path, "/targets", 30_000);
    await waitFor(() => begun, { interval: 1, message: "the /targets answer to begin" });
    assert.equal(await probeOnce(health.addr, "/healthz", 10_000), 200);
    assert.equal(ended, false, "the probe was answered before the last target was made");
    const res = await transfer;
    assert.equal(JSON.parse(res.body).length, 500);
  } finally {
    await health.shutdown();
    await local.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sharedFor() makes one answer per interval, shared by every caller in it, and drops a failed one", async () => {
  let t = 0, made = 0, fail = false;
  const get = sharedFor(1000, () => {
    made++;
    return fail ? Promise.reject(new Error("render failed")) : Promise.resolve(`render ${made}`);
  }, () => t);
  assert.equal(await get(), "render 1");
  t = 999;
  assert.equal(await get(), "render 1");
  assert.equal(made, 1, "a flood of asks within the interval renders once");
  t = 1000;
  assert.equal(await get(), "render 2");
  fail = true;
  t = 2000;
  await assert.rejects(get(), /render failed/);
  fail = false;
  assert.equal(await get(), "render 4", "a failed render is not kept");
});

Deno.test("sharedFor() shares an answer still being made, however old, and with ttl 0 makes a new one once it is made", async () => {
  let t = 0, made = 0;
  const pending: (() => void)[] = [];
  const get = sharedFor(0, () => {
    made++;
    const n = made;
    return new Promise<string>((resolve) => pending.push(() => resolve(`read ${n}`)));
  }, () => t);
  const first = get();
  t = 5000;
  const second = get();
  assert.equal(made, 1, "a request while the map is read shares the read");
  pending.shift()!();
  assert.deepEqual(await Promise.all([first, second]), ["read 1", "read 1"]);
  const third = get();
  assert.equal(made, 2, "once read, the next request reads again");
  pending.shift()!();
  assert.equal(await third, "read 2");
});
