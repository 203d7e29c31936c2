/**
 * Label and field selectors as the API server parses and applies them:
 * `a=b,c!=d,e in (x,y),f notin (z),g,!h` for labels, `a=b,c!=d` for fields.
 * Pure code, shared by list, watch and deletecollection.
 */
import { ApiError } from "./status.ts";
import type { KubeObject, ResourceType } from "./resources.ts";

export interface Requirement {
  key: string;
  op: "=" | "!=" | "in" | "notin" | "exists" | "!";
  values: string[];
}

/** A parsed selector: every requirement must hold. An empty selector matches everything. */
export type Selector = Requirement[];

/** Splits on commas that are not inside parentheses. */
function splitTerms(text: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = "";
  for (const ch of text) {
    if (ch === "(") depth++;
    if (ch === ")") depth--;
    if (ch === "," && depth === 0) {
      terms.push(current);
      current = "";
    } else {
      current += ch;
    }
  }
  terms.push(current);
  return terms.map((t) => t.trim()).filter((t) => t !== "");
}

function badSelector(kind: string, text: string, why: string): ApiError {
  return new ApiError(
    400,
    "BadRequest",
    `unable to parse requirement: ${kind} selector "${text}": ${why}`,
  );
}

/** Parses a label selector; throws a 400 ApiError on malformed text, as the API server does. */
export function parseLabelSelector(text: string | null | undefined): Selector {
  if (!text) return [];
  return splitTerms(text).map((term): Requirement => {
    const set = /^([^\s!=(),]+)\s+(in|notin)\s*\(([^)]*)\)$/.exec(term);
    if (set) {
      const values = set[3].split(",").map((v) => v.trim()).filter((v) => v !== "");
      if (values.length === 0) throw badSelector("label", text, "empty value set");
      return { key: set[1], op: set[2] as "in" | "notin", values };
    }
    const eq = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(term);
    if (eq) return { key: eq[1], op: eq[2] === "!=" ? "!=" : "=", values: [eq[3]] };
    const exists = /^(!?)\s*([^\s!=(),]+)$/.exec(term);
    if (exists) return { key: exists[2], op: exists[1] ? "!" : "exists", values: [] };
    throw badSelector("label", text, `invalid term "${term}"`);
  });
}

/**
 * Parses a field selector; only `=`, `==` and `!=` exist for fields. Throws 400
 * for a field the resource does not support, like the API server's
 * "field label not supported".
 */
export function parseFieldSelector(
  text: string | null | undefined,
  supported: readonly string[],
): Selector {
  if (!text) return [];
  return splitTerms(text).map((term): Requirement => {
    const eq = /^([^\s!=]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!eq) throw badSelector("field", text, `invalid term "${term}"`);
    if (!supported.includes(eq[1])) {
      throw new ApiError(400, "BadRequest", `field label not supported: ${eq[1]}`);
    }
    return { key: eq[1], op: eq[2] === "!=" ? "!=" : "=", values: [eq[3]] };
  });
}

/** Whether a label map satisfies every requirement. */
export function matchesLabels(selector: Selector, labels: Record<string, string> | undefined) {
  const l = labels ?? {};
  return selector.every((r) => {
    const has = Object.hasOwn(l, r.key);
    switch (r.op) {
      case "=":
      case "in":
        return has && r.values.includes(l[r.key]);
      case "!=":
      case "notin":
        return !has || !r.values.includes(l[r.key]);
      case "exists":
        return has;
      case "!":
        return !has;
    }
  });
}

/** The string value of a dotted field path, "" when absent (so `spec.nodeName=` finds unbound pods). */
function fieldValue(object: unknown, path: string): string {
  let value: unknown = object;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return "";
    value = (value as Record<string, unknown>)[part];
  }
  if (value === undefined || value === null) return "";
  return String(value);
}

/** Whether an object satisfies every field requirement. */
export function matchesFields(selector: Selector, object: unknown): boolean {
  return selector.every((r) => {
    const v = fieldValue(object, r.key);
    return r.op === "=" ? v === r.values[0] : v !== r.values[0];
  });
}

/** What a list or watch selects: a namespace and label and field selectors. */
export interface Filter {
  /** Only this namespace; undefined for all. */
  namespace?: string;
  labels?: Selector;
  fields?: Selector;
}

/** Whether an object of `type` is selected by `filter`. */
export function matches(type: ResourceType, filter: Filter, object: KubeObject): boolean {
  if (type.namespaced && filter.namespace && object.metadata?.namespace !== filter.namespace) {
    return false;
  }
  return matchesLabels(filter.labels ?? [], object.metadata?.labels) &&
    matchesFields(filter.fields ?? [], object);
}
