import assert from "node:assert/strict";
import { skipsForbidden } from "./skip.ts";

const SKIP = new URL("./skip.ts", import.meta.url).href;

/** Runs `deno test` on a file of `body` (skip.ts imported), with `env` added; its exit code and output. */
async function runTests(body: string, env: Record<string, string> = {}) {
  const dir = await Deno.makeTempDir({ prefix: "lace-skip-test-" });
  try {
    const file = `${dir}/fixture_test.ts`;
    await Deno.writeTextFile(file, `import { skipIf, skipName } from "${SKIP}";\n${body}`);
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--allow-all", "--no-prompt", "--no-check", file],
      env: { NO_COLOR: "1", ...env },
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder();
    return { code: out.code, output: text.decode(out.stdout) + text.decode(out.stderr) };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const missingTool = `
const why = "frobnicate is not installed; run scripts/setup.sh --tests";
Deno.test({ name: skipName("one", why), ignore: skipIf(why), fn() {} });
Deno.test({ name: skipName("two", why), ignore: skipIf(why), fn() {} });
Deno.test("runs", () => {});
`;

Deno.test("a test skipped for a missing tool fails the run where skips are forbidden, naming the tool once per file", async () => {
  for (const env of [{}, { CI: "true" }] as Record<string, string>[]) {
    const run = await runTests(missingTool, env);
    const failing = run.output.match(/^a test of this file would be skipped: .* FAILED/gm) ?? [];
    if (env.CI === undefined && !skipsForbidden()) {
      assert.equal(run.code, 0, run.output);
      assert.deepEqual(failing, [], run.output);
    } else {
      assert.equal(run.code, 1, `${JSON.stringify(env)}: ${run.output}`);
      assert.equal(failing.length, 1, run.output);
      assert.match(failing[0], /frobnicate is not installed; run scripts\/setup\.sh --tests/);
      assert.match(run.output, /A skip fails here \((the tests run as root|CI=true)/);
    }
    assert.match(run.output, /^one \(skipped: frobnicate is not installed.*\) \.\.\. ignored/m);
    assert.match(run.output, /^runs \.\.\. ok/m);
  }
});

Deno.test("a skip for a property of the kernel stands everywhere", async () => {
  const run = await runTests(
    `const why = "the kernel has no frobnication";
Deno.test({ name: skipName("one", why), ignore: skipIf(why, "kernel"), fn() {} });`,
    { CI: "true" },
  );
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /^one \(skipped: the kernel has no frobnication\) \.\.\. ignored/m);
});

Deno.test("a kernel's reason must say it is the kernel's, so scripts/test.sh can tell it", async () => {
  const run = await runTests(`skipIf("frobnicate is not installed", "kernel");`);
  assert.notEqual(run.code, 0);
  assert.match(run.output, /A kernel's reason to skip must start "the kernel ": "frobnicate/);
});
