/**
 * The benchmark runs end to end on this machine and writes its JSON document:
 * `bench/main.ts --quick --only reconcile` (a few seconds), checked for shape
 * only. Timings are never asserted here: they belong in bench/RESULTS.md.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { needsRoot, skipIf } from "./helpers/skip.ts";

const MAIN = fileURLToPath(new URL("../bench/main.ts", import.meta.url));

Deno.test({
  name: "bench --quick --only reconcile writes a JSON document with judged goals",
  ignore: skipIf(needsRoot("bpffs pins and BPF maps")),
  async fn() {
    const json = await Deno.makeTempFile({ prefix: "lace-bench-", suffix: ".json" });
    try {
      const out = await new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", MAIN, "--quick", "--only", "reconcile", "--json", json],
        stdout: "piped",
        stderr: "piped",
      }).output();
      const stdout = new TextDecoder().decode(out.stdout);
      const stderr = new TextDecoder().decode(out.stderr);
      assert.ok([0, 1].includes(out.code), `exit ${out.code}: ${stderr}`);
      assert.match(stdout, /3\. Reconcile at scale/);
      const doc = JSON.parse(await Deno.readTextFile(json));
      assert.equal(doc.schema, "lace-bench/1");
      assert.deepEqual(doc.failures, []);
      assert.equal(typeof doc.machine.nproc, "number");
      assert.deepEqual(Object.keys(doc.figures), ["reconcile"]);
      const fig = doc.figures.reconcile;
      assert.equal(fig.targets, fig.pods * fig.targetsPerPod);
      assert.equal(fig.mapEntriesAtEnd, fig.targets);
      for (const run of [...fig.unchanged.runs, ...fig.changed.runs]) {
        assert.equal(typeof run.wallMs, "number");
        assert.equal(typeof run.exact, "boolean");
      }
      assert.ok(doc.goals.length > 0);
      for (const goal of doc.goals) {
        assert.equal(goal.figure, "reconcile");
        assert.equal(typeof goal.met, "boolean");
        assert.equal(typeof goal.target, "string");
        assert.equal(typeof goal.measured, "string");
        if (!goal.met) assert.equal(typeof goal.reason, "string");
      }
    } finally {
      await Deno.remove(json);
    }
  },
});
