/**
 * The benchmark runs end to end on this machine and writes its JSON document:
 * `bench/main.ts --quick --only reconcile` and `--only flood` (a few seconds
 * each), checked for shape only. Timings are never asserted here: they belong
 * in bench/RESULTS.md.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { needsRoot, skipIf } from "./helpers/skip.ts";

const MAIN = fileURLToPath(new URL("../bench/main.ts", import.meta.url));

/**
 * `bench/main.ts --quick --only FIGURE --json FILE`: asserts it ran (exit 0, or 1 for a missed
 * goal) and wrote no failure, and returns its stdout and JSON document.
 */
async function quickBench(figure: string) {
  const json = await Deno.makeTempFile({ prefix: "lace-bench-", suffix: ".json" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", MAIN, "--quick", "--only", figure, "--json", json],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.ok([0, 1].includes(out.code), `exit ${out.code}: ${stderr}`);
    const doc = JSON.parse(await Deno.readTextFile(json));
    assert.deepEqual(doc.failures, []);
    return { stdout: new TextDecoder().decode(out.stdout), doc };
  } finally {
    await Deno.remove(json);
  }
}

Deno.test({
  name: "bench --quick --only reconcile writes a JSON document with judged goals",
  ignore: skipIf(needsRoot("bpffs pins and BPF maps")),
  async fn() {
    const { stdout, doc } = await quickBench("reconcile");
    assert.match(stdout, /3\. Reconcile at scale/);
    assert.equal(doc.schema, "lace-bench/1");
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
  },
});

Deno.test({
  name: "bench --quick --only flood probes the agent and its control in turn, both answered",
  ignore: skipIf(needsRoot("bpffs pins and BPF maps")),
  async fn() {
    const { doc } = await quickBench("flood");
    const { control, failedIdle, failedDuring, attacker } = doc.figures.flood;
    // Every probe of both sides answered 200: a control that never served would fail them all.
    assert.deepEqual([failedIdle, failedDuring], [0, 0]);
    assert.deepEqual([control.failedIdle, control.failedDuring], [0, 0]);
    for (const side of [control.idleMs, control.duringMs]) {
      assert.ok(side.p50 > 0 && side.p99 >= side.p50, JSON.stringify(side));
    }
    assert.ok(attacker.answered >= 128, `the flood was answered ${attacker.answered} times`);
    const goal = doc.goals.find((g: { figure: string }) => g.figure === "flood");
    if (!goal.met && !failedDuring) {
      assert.match(goal.reason, /the control alone measured \d/);
    }
  },
});
