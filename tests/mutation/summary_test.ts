import assert from "node:assert/strict";
import { type StrykerReport, summarize, summaryMarkdown } from "./summary.ts";

const source = "const a = x > 1;\nif (a &&\n  b) go();\n";

function mutant(
  status: string,
  line: number,
  start: number,
  end: number,
  replacement: string,
) {
  return {
    mutatorName: "EqualityOperator",
    replacement,
    status,
    location: { start: { line, column: start }, end: { line, column: end } },
  };
}

const report: StrykerReport = {
  files: {
    "lib/a.ts": {
      source,
      mutants: [
        mutant("Killed", 1, 11, 16, "x >= 1"),
        mutant("Timeout", 1, 11, 16, "x < 1"),
        mutant("Survived", 1, 11, 16, "x <= 1"),
        mutant("NoCoverage", 1, 11, 16, "x == 1"),
        mutant("CompileError", 1, 11, 16, "x === 1"),
        {
          mutatorName: "LogicalOperator",
          replacement: "a || b",
          status: "Survived",
          location: {
            start: { line: 2, column: 5 },
            end: { line: 3, column: 4 },
          },
        },
      ],
    },
  },
};

Deno.test("summarize() scores detected over killed, timed out, survived and uncovered mutants", () => {
  const { counts, score } = summarize(report, []);
  assert.deepEqual(counts, {
    killed: 1,
    timeout: 1,
    survived: 2,
    noCoverage: 1,
    errors: 1,
  });
  assert.equal(score, 40);
});

Deno.test("summarize() explains a survivor only by file, mutator, original text and replacement", () => {
  const why = "a is always true here";
  const base = { file: "lib/a.ts", mutator: "LogicalOperator", why };
  const matching = { ...base, original: "a  && b", replacement: "a || b" };
  const survivors = (e: typeof matching) =>
    summarize(report, [e]).survivors.filter((s) => s.mutator === "LogicalOperator");
  assert.deepEqual(survivors(matching), [{
    file: "lib/a.ts",
    line: 2,
    mutator: "LogicalOperator",
    original: "a && b",
    replacement: "a || b",
    why,
  }]);
  for (
    const other of [
      { ...matching, file: "lib/b.ts" },
      { ...matching, mutator: "EqualityOperator" },
      { ...matching, original: "a && c" },
      { ...matching, replacement: "true" },
    ]
  ) {
    assert.equal(survivors(other)[0].why, undefined, JSON.stringify(other));
  }
});

Deno.test("summaryMarkdown() marks an unexplained survivor and shows the commit a score came from", () => {
  const { counts, score, survivors } = summarize(report, []);
  const text = summaryMarkdown([{
    module: { name: "a", mutate: ["lib/a.ts"], tests: ["lib/a_test.ts"] },
    meta: {
      commit: "abc1234",
      dirty: false,
      date: "2026-12-01 07:00 UTC",
      seconds: 9,
      concurrency: 1,
    },
    counts,
    score,
    survivors,
  }]);
  assert.match(
    text,
    /\| a \| a\.ts \| 40\.0 % \| 1 \| 1 \| 3 \| 0 \| 3 \| .* \| abc1234 \| 2026-12-01/,
  );
  assert.match(
    text,
    /lib\/a\.ts:1 EqualityOperator `x > 1` → `x <= 1`: \*\*unexplained/,
  );
});
