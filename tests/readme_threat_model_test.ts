/**
 * The threat model (docs/threat-model.md, linked from the README's security section) backs each
 * line with a test, named by file and test name. A renamed or removed test would leave a claim
 * without its backing: every name must still be a test in the file named before it.
 */
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";

const REPO = fileURLToPath(new URL("..", import.meta.url));

/** Where the threat model lives. */
export const THREAT_MODEL = "docs/threat-model.md";

/** Each quoted test name with the test file named last before it. */
function references(text: string): { file: string; name: string }[] {
  const out: { file: string; name: string }[] = [];
  let file: string | undefined;
  for (const m of text.matchAll(/`([\w/.-]+_test\.ts)`|"([^"]+)"/g)) {
    if (m[1]) file = m[1];
    else if (file && !m[2].startsWith("(")) out.push({ file, name: m[2] });
  }
  return out;
}

/** A test file's source with string concatenations joined, whitespace collapsed. */
async function testSource(file: string): Promise<string> {
  const text = await Deno.readTextFile(`${REPO}/${file}`);
  return text.replace(/"\s*\+\s*"/g, "").replace(/\s+/g, " ");
}

Deno.test("every test the threat model names exists in the file it names", async () => {
  const text = await Deno.readTextFile(`${REPO}/${THREAT_MODEL}`);
  const refs = references(text.replace(/\s+/g, " "));
  assert.ok(refs.length >= 20, `only ${refs.length} test references found`);
  const missing: string[] = [];
  for (const { file, name } of refs) {
    const source = await testSource(file).catch(() => "");
    if (!namesTest(source, name)) missing.push(`${file}: "${name}"`);
  }
  assert.deepEqual(missing, [], `tests named in ${THREAT_MODEL} but not found`);
});

Deno.test("the README keeps no threat-model lines of its own: it links to the threat model", async () => {
  const readme = await Deno.readTextFile(`${REPO}/README.md`);
  assert.ok(
    !/^## Threat model\s*$/m.test(readme),
    `README.md has a "## Threat model" section: move its lines into ${THREAT_MODEL}`,
  );
  assert.ok(readme.includes(`(${THREAT_MODEL})`), `README.md does not link ${THREAT_MODEL}`);
});

/**
 * Whether `name` is the name of a test or test step in `source` (as testSource() gives it), not
 * merely a string somewhere in the file: the first of several arguments of a call (Deno.test, a
 * step, a file's own wrapper such as `privileged(name, fn)`), or the `name` of Deno.test's
 * options.
 */
export function namesTest(source: string, name: string): boolean {
  const quoted = JSON.stringify(name).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`[\\w.]\\(\\s*${quoted}\\s*,|\\bname: ${quoted}`).test(source);
}

Deno.test("namesTest() finds a test or step name, not any string of the file", () => {
  assert.ok(namesTest('Deno.test("a b", () => {});', "a b"));
  assert.ok(namesTest('Deno.test({ name: "a b", fn() {} });', "a b"));
  assert.ok(namesTest('await t.step( "a b", async () => {});', "a b"));
  assert.ok(namesTest('await step("a (b)", async () => {});', "a (b)"));
  assert.ok(namesTest('privileged( "a b", async () => {});', "a b"));
  assert.ok(!namesTest('assert.equal(x, "a b", "a b");', "a b"));
  assert.ok(!namesTest('Deno.test("a b c", () => {});', "a b"));
  assert.ok(!namesTest('assert.ok(!log.includes("a b"));', "a b"));
});
