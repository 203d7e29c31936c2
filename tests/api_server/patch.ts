/**
 * The patch formats the API server accepts: JSON merge patch (RFC 7386), JSON
 * patch (RFC 6902), and strategic merge patch, applied here as a merge patch
 * (lists are replaced, not merged by key: enough for the objects tests patch).
 */
import { ApiError } from "./status.ts";
import { isObject } from "../../lib/text/json.ts";

type Json = unknown;

/** RFC 7386: objects merge recursively, null deletes, anything else replaces. */
function mergePatch(target: Json, patch: Json): Json {
  if (!isObject(patch)) return structuredClone(patch);
  const result: Record<string, Json> = isObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

function unescape(token: string): string {
  return token.replaceAll("~1", "/").replaceAll("~0", "~");
}

function parsePointer(pointer: string): string[] {
  if (pointer === "") return [];
  if (!pointer.startsWith("/")) throw patchError(`invalid JSON pointer "${pointer}"`);
  return pointer.slice(1).split("/").map(unescape);
}

function patchError(message: string): ApiError {
  return new ApiError(
    422,
    "Invalid",
    `the server rejected our request due to an error in our request: ${message}`,
  );
}

function parentOf(doc: Json, tokens: string[]): [Record<string, Json> | Json[], string] {
  let node: Json = doc;
  for (const token of tokens.slice(0, -1)) {
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else node = undefined;
    if (node === undefined) throw patchError(`path "/${tokens.join("/")}" does not exist`);
  }
  if (!Array.isArray(node) && !isObject(node)) {
    throw patchError(`path "/${tokens.join("/")}" does not exist`);
  }
  return [node, tokens[tokens.length - 1]];
}

function getAt(doc: Json, pointer: string): Json {
  let node: Json = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[Number(token)];
    else if (isObject(node)) node = node[token];
    else node = undefined;
    if (node === undefined) throw patchError(`path "${pointer}" does not exist`);
  }
  return node;
}

function removeAt(doc: Json, pointer: string): Json {
  const [parent, key] = parentOf(doc, parsePointer(pointer));
  if (Array.isArray(parent)) {
    const index = Number(key);
    if (!Number.isInteger(index) || index < 0 || index >= parent.length) {
      throw patchError(`path "${pointer}" does not exist`);
    }
    return parent.splice(index, 1)[0];
  }
  if (!Object.hasOwn(parent, key)) throw patchError(`path "${pointer}" does not exist`);
  const old = parent[key];
  delete parent[key];
  return old;
}

function addAt(doc: Json, pointer: string, value: Json, replace: boolean): Json {
  const tokens = parsePointer(pointer);
  if (tokens.length === 0) return structuredClone(value);
  const [parent, key] = parentOf(doc, tokens);
  if (Array.isArray(parent)) {
    const index = key === "-" ? parent.length : Number(key);
    if (!Number.isInteger(index) || index < 0 || index > parent.length) {
      throw patchError(`path "${pointer}" is out of range`);
    }
    if (replace) {
      if (index >= parent.length) throw patchError(`path "${pointer}" does not exist`);
      parent[index] = structuredClone(value);
    } else {
      parent.splice(index, 0, structuredClone(value));
    }
  } else {
    if (replace && !Object.hasOwn(parent, key)) {
      throw patchError(`path "${pointer}" does not exist`);
    }
    parent[key] = structuredClone(value);
  }
  return doc;
}

/** RFC 6902 JSON patch: add, remove, replace, move, copy, test. */
function jsonPatch(target: Json, operations: Json): Json {
  if (!Array.isArray(operations)) throw patchError("a JSON patch must be an array of operations");
  let doc = structuredClone(target);
  for (const op of operations) {
    if (!isObject(op) || typeof op.path !== "string") throw patchError("operation has no path");
    switch (op.op) {
      case "add":
        doc = addAt(doc, op.path, op.value, false);
        break;
      case "replace":
        doc = addAt(doc, op.path, op.value, true);
        break;
      case "remove":
        removeAt(doc, op.path);
        break;
      case "move": {
        const value = removeAt(doc, String(op.from));
        doc = addAt(doc, op.path, value, false);
        break;
      }
      case "copy":
        doc = addAt(doc, op.path, getAt(doc, String(op.from)), false);
        break;
      case "test":
        if (JSON.stringify(getAt(doc, op.path)) !== JSON.stringify(op.value)) {
          throw patchError(`testing value "${op.path}" failed`);
        }
        break;
      default:
        throw patchError(`unknown operation "${op.op}"`);
    }
  }
  return doc;
}

/** Applies a patch of the given content type, or throws 415 for one the server does not take. */
export function applyPatch(target: Json, patch: Json, contentType: string): Json {
  const type = contentType.split(";")[0].trim().toLowerCase();
  switch (type) {
    case "application/merge-patch+json":
    case "application/strategic-merge-patch+json":
      return mergePatch(target, patch);
    case "application/json-patch+json":
      return jsonPatch(target, patch);
    default:
      throw new ApiError(
        415,
        "UnsupportedMediaType",
        `the body of the request was in an unknown format - accepted media types include: ` +
          `application/json-patch+json, application/merge-patch+json, ` +
          `application/strategic-merge-patch+json`,
      );
  }
}
