import assert from "node:assert/strict";
import { nestedDeeperThan } from "../text/json.ts";
import { loadYamlParser, MAX_MANIFEST_DEPTH, parseManifests } from "./manifests.ts";
import {
  deepJson,
  deepYamlBlock,
  deepYamlCompact,
  deepYamlFlow,
  podYaml,
} from "./_manifest_fixture.ts";

await loadYamlParser();

Deno.test("parseManifests() reads several documents and a List with kindless items", () => {
  const text = [
    podYaml("a"),
    "---",
    "kind: List\nitems:\n- metadata: {name: b, uid: b}\n  spec: {containers: []}",
    "---",
    "kind: ConfigMap\nmetadata: {name: c}",
    "---",
  ].join("\n");
  const { pods, problems } = parseManifests(text, "x.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a", "b"]);
  assert.equal(pods[0].status?.podIPs?.[0].ip, "10.0.0.1");
  assert.deepEqual(problems, []);
});

Deno.test("parseManifests() reports a malformed pod and keeps the file's others", () => {
  const text = `${podYaml("a")}\n---\nkind: Pod\nmetadata: {name: nouid}\nspec: {containers: []}`;
  const { pods, problems } = parseManifests(text, "x.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a"]);
  assert.equal(problems.length, 1);
  assert.match(problems[0], /x\.yaml: document 2: .*uid/);
});

Deno.test("parseManifests() throws SyntaxError naming the file when a document does not parse", () => {
  assert.throws(() => parseManifests(`${podYaml("a")}\n---\nmetadata: [`, "half.yaml"), {
    name: "SyntaxError",
    message: /half\.yaml/,
  });
  assert.throws(() => parseManifests('{"kind": "Pod",', "half.json"), SyntaxError);
});

Deno.test("parseManifests() reads a JSON PodList", () => {
  const list = {
    kind: "PodList",
    items: [{ metadata: { name: "a", uid: "a" }, spec: { containers: [] } }],
  };
  const { pods } = parseManifests(JSON.stringify(list, null, "\t"), "pods.json");
  assert.equal(pods[0].metadata.namespace, "default");
});

Deno.test("the deeply nested manifests below are valid pods when shallow", () => {
  for (
    const [make, file] of [[deepYamlFlow, "d.yaml"], [deepYamlBlock, "d.yaml"], [
      deepYamlCompact,
      "d.yaml",
    ], [deepJson, "d.json"]] as const
  ) {
    assert.deepEqual(parseManifests(make(3), file).pods.map((p) => p.metadata.uid), ["d"]);
  }
});

for (
  const [label, make, file] of [
    ["YAML flow sequences", deepYamlFlow, "deep.yaml"],
    ["YAML block mappings", deepYamlBlock, "deep.yaml"],
    ["YAML compact sequences", deepYamlCompact, "deep.yaml"],
    ["JSON arrays", deepJson, "deep.json"],
  ] as const
) {
  for (const depth of [MAX_MANIFEST_DEPTH + 1, 5000]) {
    Deno.test(`parseManifests() skips ${label} nested ${depth} levels deep with its reason`, () => {
      const { pods, problems } = parseManifests(make(depth), file);
      assert.deepEqual(pods, []);
      assert.equal(problems.length, 1);
      assert.match(problems[0], /deep\.(yaml|json): document 1: nested more than 64 levels deep/);
    });
  }
}

Deno.test("parseManifests() keeps a file's other documents when one is nested too deeply", () => {
  const text = `${podYaml("a")}\n---\n${deepYamlFlow(5000)}\n---\n${podYaml("b")}`;
  const { pods, problems } = parseManifests(text, "x.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a", "b"]);
  assert.match(problems.join(), /document 2: nested more than/);
});

Deno.test("parseManifests() accepts a pod nested exactly to the limit", () => {
  // metadata and spec are levels 1-2 of the pod; the deepest annotation-free value is at the limit.
  const value = { kind: "Pod", metadata: { name: "a", uid: "a" }, spec: { containers: [] } };
  let inner: unknown = 1;
  for (let i = 0; i < MAX_MANIFEST_DEPTH - 2; i++) inner = [inner];
  (value.spec as Record<string, unknown>).extra = inner;
  assert.equal(nestedDeeperThan(value, MAX_MANIFEST_DEPTH), false);
  assert.equal(nestedDeeperThan({ x: value }, MAX_MANIFEST_DEPTH), true);
  assert.deepEqual(parseManifests(JSON.stringify(value), "a.json").problems, []);
});

Deno.test("parseManifests() skips a document whose aliases expand too often", () => {
  const laughs = ["a: &a [x, x, x, x, x, x, x, x, x, x]"];
  for (let i = 1; i < 9; i++) {
    laughs.push(
      `${"b".repeat(i)}: &${"b".repeat(i)} [${
        Array(10).fill(i === 1 ? "*a" : `*${"b".repeat(i - 1)}`).join(", ")
      }]`,
    );
  }
  const text = `${podYaml("a")}\n---\nkind: Pod\nspec:\n  ${laughs.join("\n  ")}`;
  const { pods, problems } = parseManifests(text, "lol.yaml");
  assert.deepEqual(pods.map((p) => p.metadata.uid), ["a"]);
  assert.match(problems.join(), /lol\.yaml: document 2: .*alias/i);
});
