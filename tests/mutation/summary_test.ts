import assert from "node:assert/strict";
import {
  committedModules,
  type ModuleResult,
  type StrykerReport,
  summarize,
  summaryMarkdown,
} from "./summary.ts";

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
  const text = summaryMarkdown(["a"], [{
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

function result(
  name: string,
  seconds: number,
  commit: string,
  why?: string,
): ModuleResult {
  const { counts, score, survivors } = summarize(
    report,
    why
      ? [{
        file: "lib/a.ts",
        mutator: "EqualityOperator",
        original: "x > 1",
        replacement: "x <= 1",
        why,
      }]
      : [],
  );
  return {
    module: {
      name,
      mutate: [`lib/${name}.ts`],
      tests: [`lib/${name}_test.ts`],
    },
    meta: {
      commit,
      dirty: false,
      date: "2026-12-01 07:00 UTC",
      seconds,
      concurrency: 1,
    },
    counts,
    score,
    survivors,
  };
}

/** The lines of `text` from its row of `name` and from its survivors section of `name`. */
function moduleLines(
  text: string,
  name: string,
): { row?: string; survivors: string[] } {
  const lines = text.split("\n");
  const start = lines.indexOf(`## Survivors: ${name}`);
  const end = lines.findIndex((l, i) => i > start && l.startsWith("## "));
  return {
    row: lines.find((l) => l.startsWith(`| ${name} |`)),
    survivors: start < 0 ? [] : lines.slice(start + 2, end < 0 ? undefined : end).filter((l) => l),
  };
}

Deno.test("summaryMarkdown() keeps the committed row and survivors of every module this run did not measure", () => {
  const before = summaryMarkdown(["a", "b", "c"], [
    result("a", 10, "aaaaaaa"),
    result("b", 20, "bbbbbbb"),
    result("c", 30, "ccccccc", "x is never 1 here"),
  ]);
  const after = summaryMarkdown(
    ["a", "b", "c"],
    [result("b", 25, "ddddddd")],
    before,
  );
  for (const kept of ["a", "c"]) {
    assert.deepEqual(moduleLines(after, kept), moduleLines(before, kept), kept);
  }
  assert.match(
    moduleLines(after, "b").row!,
    /\| 25 s \(concurrency 1\) \| ddddddd \|/,
  );
  assert.equal(moduleLines(after, "b").survivors.length, 3);
  assert.match(after, /All modules together: 65 s\./);
  const rows = after.split("\n").filter((l) => /^\| [abc] \|/.test(l));
  assert.deepEqual(rows.map((l) => l[2]), ["a", "b", "c"]);
  // Run again over its own output, the summary stays the same.
  assert.equal(summaryMarkdown(["a", "b", "c"], [], after), after);
});

Deno.test("summaryMarkdown() leaves out a committed module that is no longer in the list", () => {
  const before = summaryMarkdown(["a", "old"], [
    result("a", 10, "aaaaaaa"),
    result("old", 5, "eeeeeee"),
  ]);
  const after = summaryMarkdown(["a"], [], before);
  assert.deepEqual(moduleLines(after, "old"), {
    row: undefined,
    survivors: [],
  });
  assert.match(after, /All modules together: 10 s\./);
});

Deno.test("committedModules() reads each module's row, time and survivor lines", () => {
  const text = summaryMarkdown(["a", "c"], [
    result("a", 10, "aaaaaaa"),
    result("c", 30, "ccccccc", "x is never 1 here"),
  ]);
  const modules = committedModules(text);
  assert.deepEqual([...modules.keys()], ["a", "c"]);
  assert.equal(modules.get("c")!.seconds, 30);
  assert.equal(modules.get("c")!.row, moduleLines(text, "c").row);
  assert.deepEqual(
    modules.get("c")!.survivors,
    moduleLines(text, "c").survivors,
  );
  assert.match(modules.get("c")!.survivors[0], /x <= 1`: x is never 1 here$/);
});
