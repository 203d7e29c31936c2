/**
 * Pod manifests as text, read into Pod objects: YAML or JSON, several
 * documents, and lists. The text is untrusted (a file anyone with write access
 * to the directory wrote), so a document that is not a usable pod, or nests
 * too deeply for the code downstream, is skipped with its reason.
 */
import { getLogger } from "@logtape/logtape";
import { normalisePod, type Pod } from "./pod.ts";
import { nestedDeeperThan } from "../text/json.ts";

// The directory source's category: these lines come from reading its files.
const log = getLogger(["lace", "pods", "dir"]);

/**
 * Deepest nesting of objects and arrays a manifest may have. A Pod is about a
 * dozen levels deep (List, items, spec, affinity, terms, expressions, values);
 * thousands of levels overflow the stack of recursive code downstream.
 */
export const MAX_MANIFEST_DEPTH = 64;

const tooDeep = (index: number) =>
  `document ${index + 1}: nested more than ${MAX_MANIFEST_DEPTH} levels deep, skipped`;
const isStackOverflow = (e: unknown) => e instanceof RangeError || /call stack/i.test(String(e));

/**
 * The YAML parser, loaded with the first YAML manifest: the agent on the API
 * alone (the chart's default) or on JSON files never pays for its memory.
 */
let yaml: typeof import("yaml") | undefined;

/** Loads the YAML parser parseManifests() needs for `.yaml`/`.yml` files; idempotent. */
export async function loadYamlParser(): Promise<void> {
  yaml ??= await import("yaml");
}

/** Whether parseManifests() reads `file` as YAML (else as JSON). */
export function isYamlFile(file: string): boolean {
  return !/\.json$/i.test(file);
}

/**
 * Extracts the Pod objects from one manifest file's text: single Pods, several
 * YAML documents, and `List`/`PodList` objects with `items` (items without a
 * `kind` are pods, as in an API list). Other kinds are ignored. Throws
 * SyntaxError when any document does not parse (the file may be half written);
 * an object that parses but is not a usable pod, or is nested more than
 * MAX_MANIFEST_DEPTH levels deep, is returned in `problems`, and the file's
 * other pods still count.
 */
export function parseManifests(text: string, file: string): { pods: Pod[]; problems: string[] } {
  const values: unknown[] = [];
  const problems: string[] = [];
  if (!isYamlFile(file)) {
    try {
      values.push(JSON.parse(text));
    } catch (error) {
      if (isStackOverflow(error)) problems.push(`${file}: ${tooDeep(0)}`);
      else throw new SyntaxError(`${file}: ${(error as Error).message}`);
    }
  } else {
    let docs;
    try {
      if (!yaml) throw new Error("The YAML parser is not loaded: call loadYamlParser() first");
      docs = yaml.parseAllDocuments(text);
    } catch (error) {
      // The parser catches most overflows itself (below); one that escapes it ends the file.
      if (!isStackOverflow(error)) throw error;
      return { pods: [], problems: [`${file}: ${tooDeep(0)}`] };
    }
    for (const [index, doc] of docs.entries()) {
      if (doc.errors.some(isStackOverflow)) {
        problems.push(`${file}: ${tooDeep(index)}`);
        values.push(undefined); // keeps the document numbers of later problems right
        continue;
      }
      // One broken document makes the whole file suspect (half written): keep nothing of it.
      if (doc.errors.length) {
        const reason = doc.errors[0].message.split("\n")[0];
        throw new SyntaxError(`${file}: document ${index + 1}: ${reason}`);
      }
      try {
        values.push(doc.toJS());
      } catch (error) {
        // An alias expanded too often (a "billion laughs" document), or an overflow.
        problems.push(
          `${file}: ${
            isStackOverflow(error)
              ? tooDeep(index)
              : `document ${index + 1}: ${(error as Error).message}`
          }`,
        );
        values.push(undefined);
      }
    }
  }
  const pods: Pod[] = [];
  for (const [index, value] of values.entries()) {
    if (nestedDeeperThan(value, MAX_MANIFEST_DEPTH)) {
      problems.push(`${file}: ${tooDeep(index)}`);
      continue;
    }
    if (value === null || typeof value !== "object") continue;
    const { kind, items, spec } = value as { kind?: unknown; items?: unknown; spec?: unknown };
    const isList = Array.isArray(items) && (kind === undefined || /List$/.test(String(kind)));
    const candidates = isList
      ? items as unknown[]
      : kind === "Pod" || (kind === undefined && spec)
      ? [value]
      : [];
    if (!isList && candidates.length === 0) {
      log.debug("Ignored a {kind} in {file}", { kind: String(kind), file });
    }
    for (const item of candidates) {
      const itemKind = (item as { kind?: unknown } | null)?.kind;
      if (itemKind !== undefined && itemKind !== "Pod") continue;
      try {
        pods.push(normalisePod(item));
      } catch (error) {
        problems.push(`${file}: document ${index + 1}: ${(error as Error).message}`);
      }
    }
  }
  return { pods, problems };
}
