/**
 * metav1.Status, the body of every API server error, and the error class the
 * store throws so the HTTP layer can answer exactly as the API server would.
 */

export interface StatusCause {
  reason?: string;
  message: string;
  field?: string;
}

export interface StatusDetails {
  name?: string;
  group?: string;
  kind?: string;
  causes?: StatusCause[];
  retryAfterSeconds?: number;
}

export interface Status {
  kind: "Status";
  apiVersion: "v1";
  metadata: Record<string, never>;
  status: "Failure" | "Success";
  message: string;
  reason: string;
  details?: StatusDetails;
  code: number;
}

/** An API failure: HTTP code, machine reason (NotFound, AlreadyExists, ...) and message. */
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails,
  ) {
    super(message);
  }

  toStatus(): Status {
    return statusBody(this.code, this.reason, this.message, this.details);
  }
}

/** Builds a failure Status object. */
function statusBody(
  code: number,
  reason: string,
  message: string,
  details?: StatusDetails,
): Status {
  const status: Status = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  };
  if (details) status.details = details;
  return status;
}

/** The reason the API server gives for a bare HTTP code. */
export function reasonForCode(code: number): string {
  switch (code) {
    case 400:
      return "BadRequest";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "NotFound";
    case 405:
      return "MethodNotAllowed";
    case 409:
      return "Conflict";
    case 410:
      return "Expired";
    case 415:
      return "UnsupportedMediaType";
    case 422:
      return "Invalid";
    case 429:
      return "TooManyRequests";
    case 503:
      return "ServiceUnavailable";
    case 504:
      return "Timeout";
    default:
      return "InternalError";
  }
}

/** A JSON response carrying a Status, as the API server sends for errors. */
export function statusResponse(error: ApiError): Response {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (error.details?.retryAfterSeconds !== undefined) {
    headers["retry-after"] = String(error.details.retryAfterSeconds);
  }
  return new Response(JSON.stringify(error.toStatus()), { status: error.code, headers });
}
