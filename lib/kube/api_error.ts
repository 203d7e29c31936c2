/**
 * What a failed Kubernetes API call says: client-node's ApiException carries the HTTP status
 * as `code`, other errors of the stack as `statusCode`, and a system error its name as `code`
 * (ECONNREFUSED). One reading for every caller (Events, the pod lookup, the pod watch).
 */

/** The HTTP status of a failed API call, when it has one (404 for a missing object). */
export function apiStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown })?.code ??
    (error as { statusCode?: unknown })?.statusCode;
  return typeof code === "number" ? code : undefined;
}

/**
 * A failed call's message with its status or code (`message (503)`), for a log line; an object
 * with a message (a watch's ERROR Status) gives that message, anything else its text.
 */
export function apiErrorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { statusCode?: unknown }).statusCode ??
      (error as { code?: unknown }).code;
    return code !== undefined ? `${error.message} (${code})` : error.message;
  }
  if (error && typeof error === "object" && "message" in error) {
    return String((error as { message: unknown }).message);
  }
  return String(error);
}
