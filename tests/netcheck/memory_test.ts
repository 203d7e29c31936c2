import assert from "node:assert/strict";

Deno.test({
  name: "memory stays flat over 119002 paths of 200 simulated nodes",
  sanitizeResources: false,
  async fn() {
    const script = new URL("./memory_run.ts", import.meta.url).pathname;
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--v8-flags=--expose-gc", script, "200"],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
    const r = JSON.parse(new TextDecoder().decode(out.stdout));
    // Every connect, then the latency and the bandwidth of all but the 199 paths into the
    // refusing node.
    assert.equal(r.paths, 3 * 200 * 199 - 2 * 199);
    assert.equal(r.violations, 0);
    assert.ok(r.failuresKept <= 50);
    assert.equal(r.asymmetryPending, 0);
    // Heap after a full GC, sampled at each eighth of each phase: growth stays
    // far below what keeping 120k results would cost (tens of MB).
    const growth = Math.max(...r.samples) - Math.min(...r.samples);
    assert.ok(growth < 2_000_000, `heap grew by ${growth} bytes: ${r.samples.join(", ")}`);
  },
});
