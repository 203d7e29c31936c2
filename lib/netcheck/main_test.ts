import assert from "node:assert/strict";
import { runNetcheck } from "./main.ts";

Deno.test("runNetcheck() returns 2 for a bad flag without touching a cluster", async () => {
  assert.equal(await runNetcheck(["--concurrency=zero"]), 2);
});

Deno.test("runNetcheck() returns 3 when the kubeconfig file does not exist", async () => {
  assert.equal(await runNetcheck(["--kubeconfig=/nonexistent/kubeconfig"]), 3);
});
