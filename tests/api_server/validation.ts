/**
 * What the API server rejects on create and update: object names, and Events
 * (the legacy core/v1 rules of k8s.io/kubernetes pkg/apis/core/validation,
 * plus the MicroTime decoding that refuses an eventTime without exactly six
 * fractional digits).
 */
import { ApiError, type StatusCause } from "./status.ts";
import type { KubeObject, ResourceType } from "./resources.ts";
import { qualifiedResource } from "./resources.ts";

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
/** metav1.MicroTime's wire format: RFC 3339 with exactly six fractional digits. */
const MICRO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}(Z|[+-]\d\d:\d\d)$/;
/** metav1.Time: RFC 3339; Go's parser accepts optional fractional seconds. */
const TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/;

function isDns1123Subdomain(value: string): boolean {
  return value.length <= 253 && DNS1123_SUBDOMAIN.test(value);
}

function isDns1123Label(value: string): boolean {
  return value.length <= 63 && DNS1123_LABEL.test(value);
}

/** A qualified name such as "lace.io/agent": optional DNS subdomain prefix, then a name. */
function isQualifiedName(value: string): boolean {
  const parts = value.split("/");
  if (parts.length > 2) return false;
  const name = parts[parts.length - 1];
  if (name.length > 63 || !QUALIFIED_NAME.test(name)) return false;
  return parts.length === 1 || (parts[0] !== "" && isDns1123Subdomain(parts[0]));
}

/** 422 Invalid with causes, worded like the API server. */
export function invalid(
  type: ResourceType,
  name: string,
  causes: StatusCause[],
): ApiError {
  const kind = type.kind;
  const summary = causes.map((c) => `${c.field}: ${c.message}`).join(", ");
  return new ApiError(422, "Invalid", `${kind} "${name}" is invalid: ${summary}`, {
    name,
    group: type.group,
    kind,
    causes,
  });
}

/** Checks metadata.name (and namespace names, which must be DNS labels). */
export function validateName(type: ResourceType, object: KubeObject): void {
  const name = object.metadata?.name ?? "";
  const ok = type.resource === "namespaces" ? isDns1123Label(name) : isDns1123Subdomain(name);
  if (!ok) {
    throw invalid(type, name, [{
      reason: "FieldValueInvalid",
      field: "metadata.name",
      message: `Invalid value: "${name}": a lowercase RFC 1123 subdomain must consist of lower ` +
        `case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    }]);
  }
}

/** Error for a timestamp the JSON decoder cannot parse: 400, like the API server's decode error. */
function badTime(type: ResourceType, field: string, value: unknown, layout: string): ApiError {
  return new ApiError(
    400,
    "BadRequest",
    `${
      qualifiedResource(type)
    } in version "${type.version}" cannot be handled as a ${type.kind}: ` +
      `parsing time ${JSON.stringify(value)} as "${layout}": cannot parse ${field}`,
  );
}

/**
 * Validates a core/v1 Event as the API server does on create and update:
 * decodable timestamps, namespace agreement with the involved object, and when
 * eventTime is set, the "new" Event fields (reportingComponent, reportingInstance,
 * action, reason) and their length limits. Lace also requires type Normal|Warning.
 */
export function validateEvent(event: KubeObject, namespace: string, type: ResourceType): void {
  const name = event.metadata?.name ?? "";
  for (const field of ["firstTimestamp", "lastTimestamp"]) {
    const value = event[field];
    if (value !== undefined && value !== null && (typeof value !== "string" || !TIME.test(value))) {
      throw badTime(type, field, value, "2006-01-02T15:04:05Z07:00");
    }
  }
  const eventTime = event.eventTime;
  if (
    eventTime !== undefined && eventTime !== null &&
    (typeof eventTime !== "string" || !MICRO_TIME.test(eventTime))
  ) {
    throw badTime(type, "eventTime", eventTime, "2006-01-02T15:04:05.000000Z07:00");
  }
  const causes: StatusCause[] = [];
  const required = (field: string) =>
    causes.push({ reason: "FieldValueRequired", field, message: "Required value" });
  const tooLong = (field: string, limit: number) =>
    causes.push({
      reason: "FieldValueInvalid",
      field,
      message: `Invalid value: "": can have at most ${limit} characters`,
    });
  const involved = (event.involvedObject ?? {}) as Record<string, unknown>;
  const involvedNs = typeof involved.namespace === "string" ? involved.namespace : "";
  const mismatch = () =>
    causes.push({
      reason: "FieldValueInvalid",
      field: "involvedObject.namespace",
      message: `Invalid value: "${involvedNs}": does not match event.namespace`,
    });
  if (involvedNs === "") {
    const allowed = eventTime ? ["default", "kube-system"] : ["", "default"];
    if (!allowed.includes(namespace)) mismatch();
  } else if (involvedNs !== namespace) {
    mismatch();
  }
  if (eventTime) {
    const str = (field: string) => typeof event[field] === "string" ? event[field] as string : "";
    const reporting = str("reportingComponent");
    if (!reporting) required("reportingComponent");
    else if (!isQualifiedName(reporting)) {
      causes.push({
        reason: "FieldValueInvalid",
        field: "reportingComponent",
        message: `Invalid value: "${reporting}": must be a qualified name`,
      });
    }
    const instance = str("reportingInstance");
    if (!instance) required("reportingInstance");
    if (instance.length > 128) tooLong("reportingInstance", 128);
    const action = str("action");
    if (!action) required("action");
    if (action.length > 128) tooLong("action", 128);
    const reason = str("reason");
    if (!reason) required("reason");
    if (reason.length > 128) tooLong("reason", 128);
    if (str("message").length > 1024) tooLong("message", 1024);
  }
  for (const field of ["kind", "name"]) {
    if (typeof involved[field] !== "string" || involved[field] === "") {
      required(`involvedObject.${field}`);
    }
  }
  if (event.type !== undefined && event.type !== "Normal" && event.type !== "Warning") {
    causes.push({
      reason: "FieldValueNotSupported",
      field: "type",
      message: `Unsupported value: "${event.type}": supported values: "Normal", "Warning"`,
    });
  }
  if (causes.length > 0) throw invalid(type, name, causes);
}
