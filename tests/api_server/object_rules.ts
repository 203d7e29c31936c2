/**
 * The rules the test API server's store applies to objects, and the errors it
 * answers with, worded as the real API server words them: not found,
 * conflicts and failed preconditions, a kind or namespace that does not match
 * the request, a missing name. Pure.
 */
import { ApiError } from "./status.ts";
import {
  apiVersionOf,
  type KubeObject,
  qualifiedResource,
  type ResourceType,
} from "./resources.ts";

/** RFC 3339 with second precision, the way the API server writes metav1.Time. */
export function timestamp(date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, "Z");
}

const NAME_CHARS = "bcdfghjklmnpqrstvwxz2456789";

/** The five random characters generateName appends. */
export function generateSuffix(): string {
  let suffix = "";
  for (let i = 0; i < 5; i++) suffix += NAME_CHARS[Math.floor(Math.random() * NAME_CHARS.length)];
  return suffix;
}

/** An object's text without the fields every write changes, to spot a no-op update. */
export function withoutVolatile(object: KubeObject): string {
  const copy = structuredClone(object);
  if (copy.metadata) {
    delete copy.metadata.resourceVersion;
    delete copy.metadata.generation;
  }
  return JSON.stringify(copy);
}

/** An object's text without metadata and status: what bumps the generation when it changes. */
export function specOf(object: KubeObject): string {
  const { metadata: _m, status: _s, ...rest } = object;
  return JSON.stringify(rest);
}

/** 404 for an object of `type`. */
export function notFoundError(type: ResourceType, name: string): ApiError {
  return new ApiError(404, "NotFound", `${qualifiedResource(type)} "${name}" not found`, {
    name,
    group: type.group,
    kind: type.resource,
  });
}

/** 409 for a write that cannot be applied to the current object. */
export function conflictError(type: ResourceType, name: string, why: string): ApiError {
  return new ApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(type)} "${name}": ${why}`,
    { name, group: type.group, kind: type.resource },
  );
}

/** 409 for a uid precondition that the current object does not meet. */
export function uidPreconditionError(
  type: ResourceType,
  name: string,
  wanted: string,
  actual: string | undefined,
): ApiError {
  return conflictError(
    type,
    name,
    `Precondition failed: UID in precondition: ${wanted}, UID in object meta: ${actual}`,
  );
}

/** 400 for a body whose namespace is not the request's. */
export function namespaceMismatchError(): ApiError {
  return new ApiError(
    400,
    "BadRequest",
    "the namespace of the provided object does not match the namespace sent on the request",
  );
}

/** 422 for an object with neither name nor generateName. */
export function nameRequiredError(type: ResourceType): ApiError {
  return new ApiError(
    422,
    "Invalid",
    `${type.kind} "" is invalid: metadata.name: Required value: name or generateName is required`,
    {
      kind: type.kind,
      group: type.group,
      causes: [{
        reason: "FieldValueRequired",
        field: "metadata.name",
        message: "Required value: name or generateName is required",
      }],
    },
  );
}

/** Throws 400 when a body names another kind than the request's resource. */
export function checkKind(type: ResourceType, object: KubeObject): void {
  if (object.kind !== undefined && object.kind !== type.kind) {
    throw new ApiError(
      400,
      "BadRequest",
      `the API version in the data (${object.apiVersion}) does not match the expected API version ` +
        `(${apiVersionOf(type)}) or kind ${object.kind} is not ${type.kind}`,
    );
  }
}
