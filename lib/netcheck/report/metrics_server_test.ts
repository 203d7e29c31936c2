import assert from "node:assert/strict";
import { NetcheckMetrics } from "./metrics.ts";
import { serveMetrics } from "./metrics_server.ts";

Deno.test("serveMetrics() serves /metrics on loopback, 404 elsewhere, and stops on abort", async () => {
  const metrics = new NetcheckMetrics();
  metrics.endRound({ nodes: ["a", "b"], networks: [""], failed: false }, 1500, false);
  const controller = new AbortController();
  const server = serveMetrics(metrics, "127.0.0.1:0", controller.signal);
  const res = await fetch(`http://127.0.0.1:${server.port}/metrics`);
  assert.equal(res.status, 200);
  assert.match(await res.text(), /^lace_netcheck_nodes 2$/m);
  const other = await fetch(`http://127.0.0.1:${server.port}/`);
  assert.equal(other.status, 404);
  await other.body?.cancel();
  controller.abort();
  await server.finished;
});

Deno.test("serveMetrics() names a malformed address", () => {
  const signal = new AbortController().signal;
  assert.throws(() => serveMetrics(new NetcheckMetrics(), "9469", signal), /HOST:PORT: "9469"/);
  assert.throws(() => serveMetrics(new NetcheckMetrics(), "a:99999", signal), /invalid port/);
});
