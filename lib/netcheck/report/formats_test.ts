import assert from "node:assert/strict";
import { JunitReport, type RunOutcome, textReport } from "./formats.ts";
import type { PathResult } from "../checks/path_result.ts";
import { Summary } from "./summary.ts";

const outcome: RunOutcome = {
  runId: "r1",
  status: "failed",
  minBandwidthBps: 0,
  asymmetryFactor: 2,
};

const path = (over: Partial<PathResult>): PathResult => ({
  phase: "connect",
  from: "a",
  to: "b",
  fromPod: "pa",
  toPod: "pb",
  ok: true,
  attempts: 1,
  durationMs: 12,
  ...over,
});

Deno.test("textReport() shows counts, slowest paths and failures with their class", () => {
  const s = new Summary(2);
  s.nodes = ["a", "b"];
  s.add(path({}));
  s.add(path({ from: "b", to: "a", ok: false, errorClass: "REFUSED", message: "REFUSED" }));
  s.add(path({ phase: "bandwidth", bitsPerSecond: 1e9 }));
  const text = textReport(s, outcome);
  assert.match(text, /Connectivity: 2 paths, 1 passed, 1 failed/);
  assert.match(text, /a → b {2}1.00 Gbit\/s/);
  assert.match(text, /connect {3}b → a {2}REFUSED/);
  assert.match(text, /Result: FAILED/);
});

Deno.test("JunitReport writes every path with counts in the header and removes its partial file", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/netcheck.xml`;
    const junit = new JunitReport(file);
    await junit.path(path({}));
    await junit.path(
      path({ from: "b", to: "a", ok: false, errorClass: "TIMEOUT", message: "<x>&\x1b[2J\u202e" }),
    );
    await junit.finish(new Summary(2), outcome);
    const xml = await Deno.readTextFile(file);
    assert.match(xml, /<testsuites name="lace netcheck" tests="2" failures="1">/);
    assert.match(xml, /<failure type="TIMEOUT" message="&#60;x&#62;&#38;\\x1b\[2J\\u202e"\/>/);
    assert.equal((xml.match(/<testcase /g) ?? []).length, 2);
    assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["netcheck.xml"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("JunitReport records a setup error as an error test case", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/n.xml`;
    await new JunitReport(file).finish(new Summary(2), {
      ...outcome,
      status: "error",
      error: "Probe pods not ready",
    });
    const xml = await Deno.readTextFile(file);
    assert.match(xml, /errors="1"/);
    assert.match(xml, /<error message="Probe pods not ready"\/>/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/** Characters XML 1.0 allows (its Char production); anything else makes the file unreadable. */
const NOT_XML_CHAR = /[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/u;

Deno.test("JunitReport stays well-formed XML whatever a pod answered: controls, U+FFFE/U+FFFF, markup", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/netcheck.xml`;
    const junit = new JunitReport(file);
    const hostile = `\x1b[2J\r\u0000"/></testcase><testcase name="forged">\uffff\ufffe\ud800"}\n` +
      "x".repeat(10_000);
    await junit.path(path({ ok: false, errorClass: "OTHER", message: hostile }));
    await junit.finish(new Summary(2), { ...outcome, error: hostile });
    const xml = await Deno.readTextFile(file);
    assert.equal(xml.match(NOT_XML_CHAR), null, "a character XML does not allow");
    // The markup is the report's own: two test cases (the path and setup), none forged.
    assert.equal((xml.match(/<testcase /g) ?? []).length, 2);
    assert.equal((xml.match(/<\/testcase>/g) ?? []).length, 2);
    assert.doesNotMatch(xml, /name="forged"/);
    // Every attribute value is closed before the next tag: no raw < or " inside one.
    for (const m of xml.matchAll(/ \w+="([^"]*)"/g)) assert.doesNotMatch(m[1], /[<>]/);
    assert.match(xml, /\\uffff\\ufffe\\ud800/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
