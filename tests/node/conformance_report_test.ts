import assert from "node:assert/strict";
import {
  counts,
  inTestCommand,
  parseJsonReport,
  reasonFor,
  renderTable,
  shortName,
  type SpecResult,
  unpassed,
} from "./conformance_report.ts";

const FILE = "test/e2e/common/node/container_probe.go";
const spec = (text: string, state: string, file = FILE, message?: string) => ({
  ContainerHierarchyTexts: ["[sig-node] Probing container"],
  LeafNodeType: "It",
  LeafNodeText: text,
  LeafNodeLocation: { FileName: `k8s.io/kubernetes@v1.37.2/${file}` },
  State: state,
  RunTime: 12e9,
  ...(message ? { Failure: { Message: message } } : {}),
});

Deno.test("parseJsonReport() keeps every It of the files, whatever its state, and no other", () => {
  const report = JSON.stringify([{
    SpecReports: [
      spec("a [Conformance]", "passed"),
      spec("b", "failed", FILE, "timed out\nmore"),
      spec("c [Alpha]", "skipped"),
      spec("d", "passed", "test/e2e/network/service.go"),
      { ...spec("e", "passed"), LeafNodeType: "SynchronizedBeforeSuite" },
    ],
  }]);
  assert.deepEqual(parseJsonReport(report, [FILE]), [
    { name: "[sig-node] Probing container a [Conformance]", outcome: "passed", seconds: 12 },
    {
      name: "[sig-node] Probing container b",
      outcome: "failed",
      message: "timed out",
      seconds: 12,
    },
    { name: "[sig-node] Probing container c [Alpha]", outcome: "skipped", seconds: 12 },
  ]);
});

Deno.test("parseJsonReport() counts a timed-out or panicked spec as failed", () => {
  const report = JSON.stringify([{
    SpecReports: [spec("t", "timedout"), spec("p", "panicked"), spec("i", "interrupted")],
  }]);
  assert.deepEqual(counts(parseJsonReport(report, [FILE])), {
    passed: 0,
    failed: 3,
    skipped: 0,
    "not run": 0,
  });
});

Deno.test("parseJsonReport() keeps ginkgo's labels of the spec and its containers", () => {
  const report = JSON.stringify([{
    SpecReports: [{
      ...spec("a [Conformance] [NodeConformance]", "passed"),
      ContainerHierarchyLabels: [["sig-node"], []],
      LeafNodeLabels: ["NodeConformance", "Conformance"],
    }, spec("b", "passed")],
  }]);
  const [a, b] = parseJsonReport(report, [FILE]);
  assert.deepEqual(a.labels, ["sig-node", "NodeConformance", "Conformance"]);
  assert.equal(b.labels, undefined);
});

Deno.test("inTestCommand() takes a spec by upstream's labels, not by the words of its name", () => {
  assert.equal(inTestCommand({ name: "x", outcome: "passed", labels: ["NodeConformance"] }), true);
  assert.equal(inTestCommand({ name: "x", outcome: "passed", labels: ["Conformance"] }), true);
  assert.equal(
    inTestCommand({ name: "x [Conformance]", outcome: "passed", labels: ["Alpha"] }),
    false,
  );
  assert.equal(inTestCommand({ name: "x [NodeConformance]", outcome: "passed" }), false);
});

Deno.test("unpassed() names each expected spec that failed, was skipped or did not run", () => {
  const expected: SpecResult[] = ["a", "b", "c", "d"].map((n) => ({
    name: `[sig-node] X ${n} [NodeConformance]`,
    outcome: "passed",
  }));
  const results: SpecResult[] = [
    { ...expected[0], outcome: "passed" },
    { ...expected[1], outcome: "failed", message: "Timed out after 300s." },
    { ...expected[2], outcome: "skipped" },
  ];
  assert.deepEqual(unpassed(expected, { title: "Lace", results }), [
    "X b: failed: Timed out after 300s.",
    "X c: skipped",
    "X d: not run",
  ]);
  assert.deepEqual(unpassed(expected.slice(0, 1), { title: "Lace", results }), []);
});

Deno.test("reasonFor() tells an alpha skip and a control-only failure from a Lace failure", () => {
  const alpha: SpecResult = { name: "a", outcome: "skipped", labels: ["Alpha"] };
  const runs = [{ title: "Lace", results: [] }, { title: "Control", control: true, results: [] }];
  assert.match(reasonFor(alpha, runs, [alpha, alpha]), /alpha feature gate off by default/);
  const spec: SpecResult = { name: "s", outcome: "passed", labels: ["NodeConformance"] };
  const failed: SpecResult = { name: "s", outcome: "failed", message: "no route" };
  assert.equal(reasonFor(spec, runs, [spec, spec]), "");
  assert.match(reasonFor(spec, runs, [spec, failed]), /^Fails in the control only .*: no route$/);
  assert.equal(reasonFor(spec, runs, [failed, failed]), "no route");
  assert.equal(reasonFor(spec, runs, [failed, spec]), "no route");
});

Deno.test("renderTable() names a spec a run did not reach as not run, where each runs, and totals each run", () => {
  const specs: SpecResult[] = [
    {
      name: "[sig-node] X a [Conformance] [NodeConformance]",
      outcome: "passed",
      labels: ["sig-node", "Conformance", "NodeConformance"],
    },
    { name: "[sig-node] X b [Alpha]", outcome: "passed", labels: ["sig-node", "Alpha"] },
  ];
  const table = renderTable(specs, [
    { title: "Lace", results: [{ name: specs[0].name, outcome: "failed", message: "no | route" }] },
    { title: "Control", control: true, results: [{ name: specs[0].name, outcome: "passed" }] },
  ]);
  const lines = table.split("\n");
  assert.equal(lines[0], "| Spec | Labels | Runs in | Lace | Control | Reason (fail or skip) |");
  assert.equal(
    lines[2],
    "| X a | Conformance, NodeConformance | test command | failed | passed | no \\| route |",
  );
  assert.equal(
    lines[3],
    "| X b | Alpha | `deno task conformance` only | not run | not run |  |",
  );
  assert.match(
    lines[4],
    /\(2 specs\) \| \| 1 in the test command \| 0 passed, 1 failed, 0 skipped, 1 not run \| 1 passed/,
  );
});

Deno.test("shortName() drops ginkgo's labels but keeps the spec's words", () => {
  assert.equal(
    shortName("[sig-node] Probing container should be ready [Conformance] [NodeConformance]"),
    "Probing container should be ready",
  );
});
