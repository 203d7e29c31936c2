/**
 * How lace agent reads its settings from flags and the environment: the flag beats the
 * variable, and every bad value is refused at once, one line each, with exit code 2, before
 * anything is pinned.
 */
import assert from "node:assert/strict";
import { lace } from "./helpers/lace_cli.ts";

Deno.test("lace agent reports a bad environment value as a one-line error with exit code 2", async () => {
  const r = await lace(["agent", "--node-name=n"], { LACE_MARK_SHIFT: "twelve" });
  assert.equal(r.code, 2);
  assert.equal(r.stderr, 'lace agent: LACE_MARK_SHIFT must be a whole number: "twelve"\n');
});

Deno.test("lace agent prefers the flag over the environment when both are bad or good", async () => {
  // The flag wins: a good flag hides a bad environment value…
  const overlapEnv = await lace([
    "agent",
    "--node-name=n",
    "--probe-mark=0x10000",
    "--mark-shift=8",
  ], {
    LACE_PROBE_MARK: "0x1000",
  });
  assert.equal(overlapEnv.code, 2);
  assert.match(overlapEnv.stderr, /Probe mark 0x10000 overlaps the network bits 0xffff00/);
  // …and a bad flag is reported even when the environment is fine.
  const badFlag = await lace(["agent", "--node-name=n", "--debounce=soon"], {
    LACE_DEBOUNCE: "5ms",
  });
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /--debounce must be a duration such as 500ms, 5s or 1m30s: "soon"/);
});

const REFUSED: [string, RegExp][] = [
  ["--metrics-addr=127.0.0.1:99999", /Metrics address port must be 1\.\.65535/],
  ["--resync-interval=600h", /--resync-interval must be at most 596h/],
  ["--resync-interval=48h", /Resync interval must be 1s\.\.24h/],
  ["--cni-socket=relative/path", /CNI socket must be an absolute path/],
  ["--agent-socket=run/agent.sock", /Agent socket must be an absolute path/],
];

for (const [flag, message] of REFUSED) {
  Deno.test(`lace agent refuses ${flag} with exit code 2 before it pins anything`, async () => {
    const pinPath = `/sys/fs/bpf/lace-cli-test-${crypto.randomUUID().slice(0, 8)}`;
    const r = await lace([
      "agent",
      "--no-kube-api",
      "--pods-dir=/nonexistent/pods",
      `--pin-path=${pinPath}`,
      flag,
    ]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, message);
    assert.doesNotMatch(r.stderr, /\bat .*\.ts:\d+/, "no stack trace");
    await assert.rejects(Deno.stat(pinPath), Deno.errors.NotFound, "nothing pinned");
  });
}

Deno.test("lace agent reports every bad value at once, one line each", async () => {
  const r = await lace([
    "agent",
    "--node-name=n",
    "--metrics-addr=127.0.0.1:99999",
    "--resync-interval=48h",
    "--cni-socket=relative/path",
  ]);
  assert.equal(r.code, 2);
  const lines = r.stderr.trim().split("\n");
  assert.equal(lines.length, 3, r.stderr);
  for (const line of lines) assert.match(line, /^lace agent: /);
});

Deno.test("lace agent without a node name for the API says how to give one", async () => {
  const r = await lace(["agent"], { NODE_NAME: "" });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /set --node-name or NODE_NAME/);
});
