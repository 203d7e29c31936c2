/**
 * How a netcheck run tells why it ended early: a SetupError for what the run
 * found wrong itself, one line for any error in its outcome and report.
 */
import { errorText } from "../../text/error.ts";

/** A setup failure (pods not ready, the Lease held, a network's namespace missing): exit code 3. */
export class SetupError extends Error {
  override name = "SetupError";
}

/** One line for an error; API errors name the HTTP status and point at the RBAC for 403. */
export function describeError(e: unknown): string {
  const code = (e as { code?: unknown })?.code;
  if (typeof code === "number" && code >= 400) {
    const body = (e as { body?: unknown }).body;
    let detail = "";
    try {
      detail =
        (typeof body === "string" ? JSON.parse(body) : body as { message?: string })?.message ??
          "";
    } catch {
      detail = String(body ?? "");
    }
    const hint = code === 403 ? "; grant the RBAC listed in docs/netcheck.md" : "";
    return `Kubernetes API request failed with HTTP ${code}: ${
      detail || (e as Error).message
    }${hint}`;
  }
  return errorText(e);
}
