import assert from "node:assert/strict";
import {
  codeSpans,
  headingAnchors,
  laceInvocations,
  localLinks,
  splitFences,
  tables,
} from "./docs_markup.ts";

Deno.test("splitFences() keeps fenced text out of the prose and returns it with its language", () => {
  const { prose, fences } = splitFences("a `x`\n```sh\nlace doctor `y`\n```\nb");
  assert.deepEqual(fences, [{ lang: "sh", text: "lace doctor `y`" }]);
  assert.deepEqual(codeSpans(prose).map((s) => s.text), ["x"]);
});

Deno.test("codeSpans() reads single and double backtick spans, also across a line break", () => {
  const spans = codeSpans("see `--pod-cidrs` and `` `x` `` and `lace\ndoctor`");
  assert.deepEqual(spans.map((s) => s.text), ["--pod-cidrs", "`x`", "lace doctor"]);
});

Deno.test("tables() splits rows on pipes, not on escaped ones or those in code spans", () => {
  const rows = tables("| a | b |\n|---|---|\n| `x\\|y` | `p | q` and \\| |\n\ntext");
  assert.deepEqual(rows, [[["a", "b"], ["`x|y`", "`p | q` and |"]]]);
});

Deno.test("headingAnchors() makes GitHub's anchors, duplicates numbered", () => {
  const anchors = headingAnchors(
    "# A b\n## The dev node: `scripts/dev node`\n## A b\n```\n# no\n```",
  );
  assert.deepEqual([...anchors], ["a-b", "the-dev-node-scriptsdev-node", "a-b-1"]);
});

Deno.test("localLinks() keeps links inside the repository", () => {
  assert.deepEqual(localLinks("[a](docs/x.md#y) [b](https://e.org) [c](#z)"), [
    "docs/x.md#y",
    "#z",
  ]);
});

Deno.test("laceInvocations() finds lace where a command starts, with its words", () => {
  const shell = [
    "lace doctor probes --timeout 2s   # a comment --nope",
    "sudo ./dist/lace agent --node-name n \\",
    "  --kubeconfig k",
    'kubectl -n lace-system exec "$POD" -- lace targets --json && echo ok',
    "scripts/dev node exec lace doctor pod team-a/web",
    "helm install lace deploy/helm/lace -n lace-system",
    "install -m 0755 dist/lace /usr/local/bin/lace",
  ].join("\n");
  assert.deepEqual(laceInvocations(shell), [
    { command: "doctor", words: ["probes", "--timeout", "2s"] },
    { command: "agent", words: ["--node-name", "n", "--kubeconfig", "k"] },
    { command: "targets", words: ["--json"] },
    { command: "doctor", words: ["pod", "team-a/web"] },
  ]);
});
