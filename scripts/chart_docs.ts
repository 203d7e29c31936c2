/**
 * `deno task chart-docs`: writes the values table of the chart's README
 * (deploy/helm/lace/README.md, between its `<!-- values:start -->` and `<!-- values:end -->`
 * lines) from values.yaml and values.schema.json, so the one list of the chart's keys is never
 * written by hand: each key's description is the comment above it in values.yaml (else the
 * schema's description), its type the schema's (enums, ranges, named definitions), its default
 * the value in values.yaml. A key with neither comment nor description is an error: say what it
 * does. scripts/chart_docs_test.ts fails when the README is not what this writes.
 *
 *   deno task chart-docs [--check]
 *
 * With --check it writes nothing and exits 1 when the README is out of date.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isMap, isScalar, parse, parseDocument, type YAMLMap } from "yaml";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const CHART = join(ROOT, "deploy/helm/lace");
export const README = join(CHART, "README.md");
export const START = "<!-- values:start -->";
export const END = "<!-- values:end -->";

// deno-lint-ignore no-explicit-any
type Schema = Record<string, any>;

/** One row of the table: a key, and what the schema and values.yaml say of it. */
export interface ValueRow {
  key: string;
  type: string;
  /** The default as YAML flow text; undefined for a section (a map whose keys have rows). */
  default?: string;
  description: string;
}

/**
 * The comment written directly above each key (the last paragraph of the comment lines before
 * it, so a file's or a group's heading is not taken for the key's), by dotted path. The `yaml`
 * library puts the comment above a map's first key on the map itself.
 */
export function keyComments(valuesText: string): Map<string, string> {
  const doc = parseDocument(valuesText);
  const out = new Map<string, string>();
  const lastParagraph = (comment: string | null | undefined) =>
    comment ? comment.split(/\n\s*\n/).at(-1)! : undefined;
  const walk = (map: YAMLMap, prefix: string) => {
    map.items.forEach((pair, i) => {
      if (!isScalar(pair.key)) return;
      const path = prefix + String(pair.key.value);
      const comment = lastParagraph(pair.key.commentBefore) ??
        (i === 0 ? lastParagraph(map.commentBefore) : undefined);
      if (comment) out.set(path, comment);
      if (isMap(pair.value)) walk(pair.value, `${path}.`);
    });
  };
  if (isMap(doc.contents)) walk(doc.contents, "");
  return out;
}

/**
 * The schema node a local `$ref` (`#/definitions/duration`, `#/definitions/x/properties/y`)
 * names, and the definition's name when it names a whole definition.
 */
function resolveRef(root: Schema, node: Schema): { node: Schema; name?: string } {
  if (typeof node.$ref !== "string") return { node };
  if (!node.$ref.startsWith("#/")) throw new Error(`Unknown $ref "${node.$ref}" in the schema`);
  const path = node.$ref.slice(2).split("/");
  let target: Schema | undefined = root;
  for (const part of path) target = target?.[part];
  if (!target) throw new Error(`Unknown $ref "${node.$ref}" in the schema`);
  return {
    node: target,
    name: path.length === 2 && path[0] === "definitions" ? path[1] : undefined,
  };
}

/** `absoluteDir` → "absolute dir": a definition's name as words. */
function words(name: string): string {
  return name.replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase();
}

const code = (v: unknown) => `\`${typeof v === "string" ? v : JSON.stringify(v)}\``;

/** What a schema node accepts, in a few words: enums, ranges, a named definition's name. */
export function typeText(node: Schema, name?: string): string {
  if (Array.isArray(node.enum)) return node.enum.map(code).join(", ");
  if ("const" in node) return code(node.const);
  const range = (n: Schema) =>
    n.minimum !== undefined && n.maximum !== undefined
      ? ` ${n.minimum}..${n.maximum}`
      : n.minimum !== undefined
      ? ` ≥ ${n.minimum}`
      : "";
  if (name && name !== "object") return node.title ?? words(name);
  const types = Array.isArray(node.type) ? node.type : [node.type ?? "any"];
  if (types.includes("array")) {
    const items: Schema = node.items ?? {};
    if (Array.isArray(items.enum)) return `list of ${items.enum.map(code).join(", ")}`;
    return items.type ? `list of ${items.type}s` : "list";
  }
  return types.join(" or ") + (types.includes("integer") ? range(node) : "");
}

/** A value as short YAML flow text (`[BPF, NET_ADMIN]`, `{type: RuntimeDefault}`, `""`). */
export function flowText(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(flowText).join(", ")}]`;
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value).map(([k, v]) => `${k}: ${flowText(v)}`).join(", ")}}`;
  }
  if (typeof value === "string") {
    // Plain when YAML reads it back as the same string; quoted otherwise ("", "0x1000", "true").
    const plain = value !== "" && !/[,{}[\]#]|^[-?:&*!|>'"%@`\s]|:\s|\s$/.test(value) &&
      readsBack(value);
    return plain ? value : JSON.stringify(value);
  }
  return String(value);
}

/** Whether YAML reads `text`, written plain, back as the same string. */
function readsBack(text: string): boolean {
  try {
    return parse(text) === text;
  } catch {
    return false;
  }
}

/**
 * A comment as one table cell: lines joined into sentences ending with a period; a list item
 * (`- x`) starts a line of its own, and an indented line is an example, shown as code on a line
 * of its own unless it continues a list item. What Markdown would read as markup (`*`, `_`,
 * `<…>`, `|`) is escaped outside code spans.
 */
export function cellText(comment: string): string {
  const lines = comment.split("\n").map((l) => l.replace(/^ /, "")).filter((l) => l.trim());
  let out = "";
  let inItem = false;
  for (const line of lines) {
    const text = line.trim();
    if (/^- /.test(line)) {
      out += `<br>${escape(text)}`;
      inItem = true;
    } else if (/^\s{2,}/.test(line) && !inItem) {
      out += `<br>\`${text.replaceAll("|", "\\|")}\``;
    } else {
      out += (out ? " " : "") + escape(text);
      inItem &&= /^\s{2,}/.test(line);
    }
  }
  return /[.:!?]$/.test(out) ? out : `${out}.`;
}

/** Escapes Markdown markup outside code spans; pipes everywhere (a table cell ends at one). */
function escape(text: string): string {
  return text.split(/(`[^`]*`)/).map((part, i) =>
    i % 2 === 1 ? part.replaceAll("|", "\\|") : part.replace(/[\\*_|]/g, (c) => `\\${c}`)
      .replaceAll("<", "&lt;").replaceAll(">", "&gt;")
  ).join("");
}

/**
 * The rows of the values table: every key of values.yaml in file order. A map whose schema names
 * its properties gets a row for each (and one of its own when it has a comment); any other value
 * (a list, a free-form object like resources) is one row with its whole default. Throws when a
 * key has neither a comment nor a schema description, or when values.yaml and the schema disagree
 * on a key.
 */
export function valueRows(valuesText: string, schema: Schema): ValueRow[] {
  const values = parse(valuesText) as Record<string, unknown>;
  const comments = keyComments(valuesText);
  const rows: ValueRow[] = [];
  const missing: string[] = [];
  const walk = (obj: Record<string, unknown>, node: Schema, prefix: string) => {
    for (const [key, value] of Object.entries(obj)) {
      const path = prefix + key;
      const child = node.properties?.[key];
      if (!child) throw new Error(`${path} is in values.yaml but not in values.schema.json`);
      const { node: resolved, name } = resolveRef(schema, child);
      const description = comments.get(path) ?? child.description ?? resolved.description;
      const isSection = resolved.properties && value !== null && typeof value === "object" &&
        !Array.isArray(value) && Object.keys(value).length > 0;
      if (isSection) {
        if (description) {
          rows.push({ key: path, type: "object", description: cellText(description) });
        }
        walk(value as Record<string, unknown>, resolved, `${path}.`);
        continue;
      }
      if (!description) missing.push(path);
      rows.push({
        key: path,
        type: typeText(resolved, name),
        default: flowText(value),
        description: description ? cellText(description) : "",
      });
    }
  };
  walk(values, schema, "");
  if (missing.length) {
    throw new Error(
      `values.yaml keys without a comment above them or a description in the schema: ` +
        `${missing.join(", ")}: say what each does`,
    );
  }
  return rows;
}

/** The values table as Markdown. */
export function valuesTable(rows: ValueRow[]): string {
  const lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"];
  for (const r of rows) {
    const def = r.default === undefined ? "" : `\`${r.default.replaceAll("|", "\\|")}\``;
    lines.push(`| \`${r.key}\` | ${r.type.replaceAll("|", "\\|")} | ${def} | ${r.description} |`);
  }
  return lines.join("\n");
}

/** `readme` with the text between its markers replaced by `table`; throws without the markers. */
export function withTable(readme: string, table: string): string {
  const start = readme.indexOf(START);
  const end = readme.indexOf(END);
  if (start < 0 || end < start) throw new Error(`The README has no ${START} … ${END} lines`);
  return `${readme.slice(0, start + START.length)}\n${table}\n${readme.slice(end)}`;
}

/** The README as this script writes it from the chart's files today. */
export async function generatedReadme(): Promise<{ current: string; generated: string }> {
  const [current, values, schema] = await Promise.all([
    Deno.readTextFile(README),
    Deno.readTextFile(join(CHART, "values.yaml")),
    Deno.readTextFile(join(CHART, "values.schema.json")),
  ]);
  return {
    current,
    generated: withTable(current, valuesTable(valueRows(values, JSON.parse(schema)))),
  };
}

if (import.meta.main) {
  const check = Deno.args.includes("--check");
  const unknown = Deno.args.filter((a) => a !== "--check");
  if (unknown.length) {
    console.error(
      `chart-docs: unknown argument "${unknown[0]}" (usage: deno task chart-docs [--check])`,
    );
    Deno.exit(2);
  }
  const { current, generated } = await generatedReadme();
  if (current === generated) {
    console.log("deploy/helm/lace/README.md: the values table is up to date");
  } else if (check) {
    console.error(
      "deploy/helm/lace/README.md: the values table is out of date: run deno task chart-docs",
    );
    Deno.exit(1);
  } else {
    await Deno.writeTextFile(README, generated);
    console.log("deploy/helm/lace/README.md: values table written");
  }
}
