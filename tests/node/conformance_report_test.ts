import assert from "node:assert/strict";
import { counts, parseJsonReport, renderTable, shortName } from "./conformance_report.ts";

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

Deno.test("renderTable() names a spec a run did not reach as not run, and totals each run", () => {
  const specs = ["[sig-node] X a [Conformance] [NodeConformance]", "[sig-node] X b"];
  const table = renderTable(specs, [
    { title: "Lace", results: [{ name: specs[0], outcome: "passed" }] },
    { title: "Control", results: [{ name: specs[0], outcome: "failed", message: "no | route" }] },
  ]);
  const lines = table.split("\n");
  assert.equal(lines[0], "| Spec | Labels | Lace | Control | Reason (fail or skip) |");
  assert.equal(lines[2], "| X a | Conformance, NodeConformance | passed | failed | no \\| route |");
  assert.equal(lines[3], "| X b |  | not run | not run |  |");
  assert.match(lines[4], /1 passed, 0 failed, 0 skipped, 1 not run \| 0 passed, 1 failed/);
});

Deno.test("shortName() drops ginkgo's labels but keeps the spec's words", () => {
  assert.equal(
    shortName("[sig-node] Probing container should be ready [Conformance] [NodeConformance]"),
    "Probing container should be ready",
  );
});
