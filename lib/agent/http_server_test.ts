import assert from "node:assert/strict";
import {
  handleRequest,
  listenAddress,
  startHttpServer,
  type StatusProvider,
} from "./http_server.ts";

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

const get = (path: string, p: StatusProvider, method = "GET") =>
  handleRequest(new Request(`http://x${path}`, { method }), p);

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

Deno.test("startHttpServer() serves metrics and health over its listener", async () => {
  const server = startHttpServer("127.0.0.1:0", provider(true));
  try {
    const metrics = await fetch(`http://${server.addr}/metrics`);
    assert.equal(metrics.headers.get("content-type"), "text/plain; version=0.0.4");
    assert.equal(await metrics.text(), "lace_up 1\n");
    assert.equal(await (await fetch(`http://${server.addr}/healthz`)).text(), "ok\n");
    const head = await fetch(`http://${server.addr}/metrics`, { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), "");
  } finally {
    await server.shutdown();
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
  assert.throws(() => listenAddress("9808"), TypeError);
  assert.throws(() => listenAddress("h:70000"), RangeError);
});
