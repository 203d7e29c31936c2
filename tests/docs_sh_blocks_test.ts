/** The `sh` blocks of the README and docs/ are shell a reader can paste: each parses. */
import assert from "node:assert/strict";
import { PAGES } from "./helpers/docs_pages.ts";

Deno.test("every sh block of the README and docs parses (bash -n)", async () => {
  const blocks = PAGES.flatMap((p) =>
    p.fences.filter((f) => f.lang === "sh").map((f) => ({ path: p.path, text: f.text }))
  );
  const inReadme = blocks.filter((b) => b.path === "README.md").length;
  assert.ok(inReadme >= 3, `the README has ${inReadme} sh blocks, fewer than its three examples`);
  const broken: string[] = [];
  for (const block of blocks) {
    const child = new Deno.Command("bash", { args: ["-n"], stdin: "piped", stderr: "piped" })
      .spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(block.text + "\n"));
    await writer.close();
    const out = await child.output();
    if (!out.success) {
      broken.push(`${block.path}: ${new TextDecoder().decode(out.stderr)}in:\n${block.text}`);
    }
  }
  assert.deepEqual(broken, []);
});
