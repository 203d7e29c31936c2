import assert from "node:assert/strict";
import { join } from "node:path";
import { FLANNEL } from "./_fixtures.ts";
import { chainStatus } from "./status.ts";

async function dirWith(files: Record<string, string>) {
  const dir = await Deno.makeTempDir({ prefix: "lace-status-" });
  for (const [n, t] of Object.entries(files)) await Deno.writeTextFile(join(dir, n), t);
  return dir;
}

const chained = (by?: string) => {
  const list = JSON.parse(FLANNEL);
  list.plugins.push({ type: "lace", ...(by ? { chainedBy: by } : {}) });
  return JSON.stringify(list);
};

const CASES: [string, Record<string, string>, string, string[]][] = [
  ["chained by the agent", { "10-f.conflist": chained("lace-agent") }, "chained", [
    "10-f.conflist",
  ]],
  ["chained by hand", { "10-f.conflist": chained() }, "hand-chained", ["10-f.conflist"]],
  ["not chained", { "10-f.conflist": FLANNEL }, "not-chained", []],
  ["unparsable", { "10-f.conflist": "{" }, "unparsable", []],
  ["empty", {}, "no-config", []],
  [
    "a later file naming lace",
    { "10-f.conflist": FLANNEL, "20-g.conflist": chained() },
    "not-chained",
    [
      "20-g.conflist",
    ],
  ],
];

for (const [what, files, state, naming] of CASES) {
  Deno.test(`chainStatus of a directory ${what} says ${state}`, async () => {
    const dir = await dirWith(files);
    try {
      const s = chainStatus(dir);
      assert.equal(s.state, state);
      assert.deepStrictEqual(s.naming, naming);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("chainStatus of a missing directory says unreadable", () => {
  assert.equal(chainStatus("/nonexistent/lace-test").state, "unreadable");
});
