/**
 * A probe's port, resolved the way the kubelet resolves it, or the reason it
 * cannot be: a probe that names no usable port gets no target.
 */
import type { SkipReason } from "./skip.ts";
import { isObject } from "../text/json.ts";
import { type Loose, str } from "./pod_fields.ts";

/**
 * Resolves a probe port the way the kubelet does (`ResolveContainerPort`): a
 * number is used as is; a string is looked up by name in this container's own
 * `ports` (first match, protocol not considered), and a string that names no
 * port but reads as a number is used as that number.
 */
export function resolvePort(
  port: unknown,
  container: Record<string, Loose>,
): { port: number } | { reason: SkipReason; message: string } {
  let value: number;
  if (typeof port === "number") {
    value = port;
  } else if (typeof port === "string" && port !== "") {
    const ports: unknown[] = Array.isArray(container.ports) ? container.ports : [];
    const named = ports.find((p) => isObject<Loose>(p) && p.name === port) as Loose;
    if (named) {
      value = named.containerPort;
    } else if (/^[0-9]+$/.test(port)) {
      value = Number(port);
    } else {
      return {
        reason: "named-port",
        message: `Port name "${port}" matches no port of container "${str(container.name) ?? ""}"`,
      };
    }
  } else {
    return { reason: "malformed", message: `Probe port is missing or invalid: ${String(port)}` };
  }
  if (typeof value !== "number" || !Number.isInteger(value) || value < 1 || value > 65535) {
    const shown = typeof port === "number" ? "" : ` (${JSON.stringify(port)})`;
    return { reason: "port-range", message: `Probe port ${value}${shown} is outside 1..65535` };
  }
  return { port: value };
}
