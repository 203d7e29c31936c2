/**
 * `lace demo`, the README's first command, run as a user runs it: every
 * kubelet probe reaches its own pod, no other process reaches any, and
 * nothing is left behind.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { needsRoot, skipIf } from "./helpers/skip.ts";

const MAIN = fileURLToPath(new URL("../main.ts", import.meta.url));

async function netnsNames(): Promise<string[]> {
  const out = await new Deno.Command("ip", { args: ["netns", "list"], stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).split("\n").map((l) => l.split(" ")[0]).filter(
    Boolean,
  );
}

/**
 * What this demo run says it built (namespaces, cgroup, pins): other tests and
 * other engineers' runs build and remove their own at the same time, so only
 * these names are checked.
 */
function builtBy(stderr: string): { namespaces: string[]; cgroup: string; pins: string } {
  const built = /Built namespaces (.+) and cgroup (\S+)/.exec(stderr);
  const pins = /pins under (\S+),/.exec(stderr)?.[1];
  assert.ok(built && pins, stderr);
  return { namespaces: built[1].split(", "), cgroup: built[2], pins };
}

/** Fails naming whatever of `built` still exists. */
async function assertGone(built: ReturnType<typeof builtBy>): Promise<void> {
  const left = await netnsNames();
  assert.deepEqual(
    built.namespaces.filter((n) => left.includes(n)),
    [],
    "no namespace left behind",
  );
  assert.throws(() => Deno.statSync(built.cgroup), Deno.errors.NotFound, "no cgroup left behind");
  assert.throws(() => Deno.statSync(built.pins), Deno.errors.NotFound, "no pins left behind");
}

Deno.test({
  name:
    "lace demo shows the default turning a second network away from a held address, sharing under the opt-in with its exposure, and every outside access refused, then cleans up",
  ignore: skipIf(needsRoot()),
  async fn() {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "demo", "--json", "--networks=2"],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, stderr);
    const report = JSON.parse(new TextDecoder().decode(out.stdout)) as {
      ok: boolean;
      holder: string;
      refusal: { refused: boolean; message: string };
      exposure: string;
      rows: {
        policy: string;
        from: string;
        pod: string;
        result: string;
        answeredBy?: string;
        mark?: string;
      }[];
    };
    assert.equal(report.ok, true);
    const rows = (policy: string, from: string) =>
      report.rows.filter((r) => r.policy === policy && r.from === from);
    // 2 pods × 2 addresses × 2 probes, from each cgroup, under each policy.
    for (const policy of ["exclusive", "shared"]) {
      assert.equal(rows(policy, "kubelet").length, 8);
      assert.equal(rows(policy, "other").length, 8);
      for (const r of rows(policy, "other")) assert.doesNotMatch(r.result, /^reached/);
    }
    // The default: the oldest pod holds the addresses, the other network's pod is turned away.
    assert.equal(report.holder, "demo/web-net1");
    for (const r of rows("exclusive", "kubelet")) {
      if (r.pod === report.holder) {
        assert.match(r.result, /^reached/);
        assert.equal(`demo/${r.answeredBy}`, r.pod);
      } else {
        assert.doesNotMatch(r.result, /^reached/, `${r.pod} is not tagged under the default`);
        assert.equal(r.mark, undefined);
      }
    }
    assert.equal(report.refusal.refused, true, report.refusal.message);
    assert.match(report.refusal.message, /already used on this node by a pod of another network/);
    // The opt-in: every pod probed in its own network, and the exposure named.
    for (const r of rows("shared", "kubelet")) {
      assert.match(r.result, /^reached/);
      assert.equal(`demo/${r.answeredBy}`, r.pod, "answered by the pod in the probe's own network");
      assert.ok(r.mark, "the connection carried a mark");
    }
    assert.match(report.exposure, /redirect to another network's pod.*policy skipped/);
    assert.match(stderr, /Cleaned up/);
    await assertGone(builtBy(stderr));
  },
});

Deno.test({
  name: "lace demo interrupted with Ctrl-C removes everything it made",
  ignore: skipIf(needsRoot()),
  async fn() {
    const child = new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", MAIN, "demo", "--networks=2"],
      env: { NO_COLOR: "1" },
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const reader = child.stderr.pipeThrough(new TextDecoderStream()).getReader();
    let said = "";
    // Interrupt once the agent runs: namespaces, cgroups, pins and processes all exist then.
    while (!said.includes("Started the agent")) {
      const { value, done } = await reader.read();
      if (done) break;
      said += value;
    }
    const built = builtBy(said);
    child.kill("SIGINT");
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      said += value;
    }
    const status = await child.status;
    assert.equal(status.code, 130, said);
    assert.match(said, /Interrupted: cleaning up/);
    await assertGone(built);
  },
});
