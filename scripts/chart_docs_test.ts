import assert from "node:assert/strict";
import { parse } from "yaml";
import {
  cellText,
  END,
  flowText,
  generatedReadme,
  keyComments,
  START,
  typeText,
  valueRows,
  valuesTable,
  withTable,
} from "./chart_docs.ts";

Deno.test("the chart README's values table is what deno task chart-docs writes from values.yaml and the schema", async () => {
  const { current, generated } = await generatedReadme();
  assert.ok(
    current === generated,
    "deploy/helm/lace/README.md's values table is out of date: run deno task chart-docs " +
      "(it writes the table from the comments of values.yaml and from values.schema.json)",
  );
});

Deno.test("keyComments() takes the comment right above each key, not the file's or a group's heading", () => {
  const yaml = [
    "# The file's heading.",
    "",
    "# First key.",
    "a: 1",
    "# A map.",
    "b:",
    "  # Its first key,",
    "  # on two lines.",
    "  c: x",
    "  d: y",
    "  # Heading of a group.",
    "",
    "  # The last key.",
    "  e: []",
  ].join("\n");
  assert.deepEqual(Object.fromEntries(keyComments(yaml)), {
    a: " First key.",
    b: " A map.",
    "b.c": " Its first key,\n on two lines.",
    "b.e": " The last key.",
  });
});

const SCHEMA = {
  definitions: {
    duration: { title: "duration", type: "string" },
    object: { type: "object" },
    timing: {
      type: "object",
      properties: { period: { description: "Seconds between probes", type: "integer" } },
    },
  },
  properties: {
    mode: { enum: ["a", "b"] },
    every: { $ref: "#/definitions/duration" },
    port: { type: "integer", minimum: 1, maximum: 65535 },
    list: { type: "array", items: { type: "string" } },
    resources: { $ref: "#/definitions/object" },
    probe: { $ref: "#/definitions/timing" },
    section: {
      type: "object",
      properties: {
        inner: { type: "boolean" },
        period: { $ref: "#/definitions/timing/properties/period" },
      },
    },
  },
};

Deno.test("valueRows() gives each key its comment, the schema's type and its default, sections first", () => {
  const values = [
    "# The mode.",
    "mode: a",
    "# How often.",
    "every: 5m",
    "# The port.",
    "port: 9808",
    "# Some names.",
    "list: [x, y]",
    "# Free-form: one row.",
    "resources:",
    "  requests: {cpu: 20m}",
    "probe:",
    "  period: 2",
    "# A section.",
    "section:",
    "  # Inside | it, <here> *all*.",
    "  inner: true",
    "  period: 5",
  ].join("\n");
  assert.deepEqual(valueRows(values, SCHEMA), [
    { key: "mode", type: "`a`, `b`", default: "a", description: "The mode." },
    { key: "every", type: "duration", default: "5m", description: "How often." },
    { key: "port", type: "integer 1..65535", default: "9808", description: "The port." },
    { key: "list", type: "list of strings", default: "[x, y]", description: "Some names." },
    {
      key: "resources",
      type: "object",
      default: "{requests: {cpu: 20m}}",
      description: "Free-form: one row.",
    },
    // No comment: the schema's description, and no row for the section without one.
    { key: "probe.period", type: "integer", default: "2", description: "Seconds between probes." },
    { key: "section", type: "object", description: "A section." },
    {
      key: "section.inner",
      type: "boolean",
      default: "true",
      description: "Inside \\| it, &lt;here&gt; \\*all\\*.",
    },
    {
      key: "section.period",
      type: "integer",
      default: "5",
      description: "Seconds between probes.",
    },
  ]);
});

Deno.test("valueRows() refuses a key without a comment or description, and a key the schema lacks, naming them", () => {
  assert.throws(
    () => valueRows("mode: a\nport: 1", SCHEMA),
    /values\.yaml keys without a comment above them or a description in the schema: mode, port: say what each does/,
  );
  assert.throws(
    () => valueRows("# x\nother: 1", SCHEMA),
    /other is in values\.yaml but not in values\.schema\.json/,
  );
});

Deno.test("flowText() writes values that YAML reads back as they were", () => {
  const values = [
    "",
    "0x1000",
    "true",
    "16",
    "lace",
    "127.0.0.1:9469",
    "a: b",
    "[x]",
    "#x",
    "- x",
    "sha256:abc",
    16,
    false,
    [],
    {},
    ["BPF", "NET_ADMIN"],
    { type: "RuntimeDefault", nested: { list: ["", "x y"] } },
    [{ operator: "Exists" }],
    { "kubernetes.io/os": "linux" },
  ];
  for (const value of values) {
    assert.deepEqual(
      parse(flowText(value)),
      value,
      `${JSON.stringify(value)} -> ${flowText(value)}`,
    );
  }
  assert.equal(flowText("lace"), "lace");
  assert.equal(flowText(""), '""');
  assert.equal(flowText("0x1000"), '"0x1000"');
});

Deno.test("typeText() names enums, lists of enums, ranges and named definitions", () => {
  assert.equal(
    typeText({ type: "array", items: { enum: ["Deny", "Warn"] } }),
    "list of `Deny`, `Warn`",
  );
  assert.equal(typeText({ type: "integer", minimum: 0 }), "integer ≥ 0");
  assert.equal(
    typeText({ type: ["string", "integer"], minimum: 1, maximum: 9 }),
    "string or integer 1..9",
  );
  assert.equal(typeText({ const: 1 }), "`1`");
  assert.equal(typeText({ type: "string" }, "absoluteDir"), "absolute dir");
  assert.equal(typeText({ title: "DNS label", type: "string" }, "dnsLabel"), "DNS label");
});

Deno.test("cellText() joins a comment into one cell: list items and examples on lines of their own", () => {
  assert.equal(
    cellText(" Where it runs, e.g.\n   k3s: /a|b\n   talos: /c\n See the docs"),
    "Where it runs, e.g.<br>`k3s: /a\\|b`<br>`talos: /c` See the docs.",
  );
  assert.equal(
    cellText(" Two rules:\n - one that\n   goes on;\n - two."),
    "Two rules:<br>- one that goes on;<br>- two.",
  );
  assert.equal(
    cellText(" Keep `a|b` and `<x>` as code, LACE_* not"),
    "Keep `a\\|b` and `<x>` as code, LACE\\_\\* not.",
  );
});

Deno.test("valuesTable() and withTable() replace what is between the markers, and refuse a README without them", () => {
  const table = valuesTable([{ key: "a", type: "`x` | `y`", default: "[a|b]", description: "A." }]);
  assert.equal(
    table,
    "| key | type | default | description |\n| --- | --- | --- | --- |\n" +
      "| `a` | `x` \\| `y` | `[a\\|b]` | A. |",
  );
  const readme = `# Chart\n\n${START}\nold\n${END}\nafter\n`;
  assert.equal(withTable(readme, "new"), `# Chart\n\n${START}\nnew\n${END}\nafter\n`);
  assert.throws(() => withTable("# Chart\n", "new"), /The README has no <!-- values:start -->/);
});
