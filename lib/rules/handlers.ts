/**
 * What the kubelet connects to for one container: its probes and its HTTP
 * lifecycle hooks, in spec order, each with the action that names the port.
 * Pure; read tolerantly (a field of the wrong shape is reported, never thrown).
 */
import { isObject } from "../text/json.ts";
import type { Loose } from "./pod_fields.ts";
import type { HookKind, ProbeHandler, ProbeKind, TargetKind } from "./kinds.ts";

/** One handler of a container the kubelet opens a connection for. */
export interface ConnectingHandler {
  kind: TargetKind;
  handler: ProbeHandler;
  /** The handler's action object (`httpGet`, `tcpSocket` or `grpc`), to be checked. */
  action: Loose;
  /** The probe's periodSeconds as written (hooks have none). */
  periodSeconds?: unknown;
}

/** A probe or hook that is there but cannot be read, with what is wrong. */
export interface MalformedHandler {
  /** Absent when the whole `lifecycle` is unreadable. */
  kind?: TargetKind;
  message: string;
}

const PROBES: [ProbeKind, "livenessProbe" | "readinessProbe" | "startupProbe"][] = [
  ["liveness", "livenessProbe"],
  ["readiness", "readinessProbe"],
  ["startup", "startupProbe"],
];

const HOOKS: readonly HookKind[] = ["postStart", "preStop"];

/**
 * The container's probes (liveness, readiness, startup) and then, when
 * `hooks` is on, its lifecycle hooks (postStart, preStop): the order of the
 * fields in core/v1 Container. Only handlers that make the kubelet connect
 * are yielded:
 * - a probe's first handler set in the kubelet's order (exec, httpGet,
 *   tcpSocket, grpc): exec makes no connection;
 * - a hook's httpGet only. The kubelet's hook runner
 *   (pkg/kubelet/lifecycle/handlers.go, `Run`) runs exec, httpGet and sleep
 *   and refuses anything else as an invalid handler, so a tcpSocket hook
 *   (deprecated, still accepted by the API) never connects; exec and sleep
 *   make no connection either.
 * A probe, `lifecycle` or hook that is not an object (and not null) is
 * reported through `malformed` and yields nothing.
 */
export function* connectingHandlers(
  c: Record<string, Loose>,
  container: string,
  hooks: boolean,
  malformed: (m: MalformedHandler) => void,
): Generator<ConnectingHandler> {
  for (const [kind, field] of PROBES) {
    const probe = c[field];
    if (probe === undefined || probe === null) continue;
    if (!isObject<Loose>(probe)) {
      malformed({ kind, message: `${field} of container "${container}" is not an object` });
      continue;
    }
    // The kubelet checks handlers in this order and uses the first one set.
    if (probe.exec !== undefined && probe.exec !== null) continue;
    const handler: ProbeHandler | undefined = isObject<Loose>(probe.httpGet)
      ? "httpGet"
      : isObject<Loose>(probe.tcpSocket)
      ? "tcpSocket"
      : isObject<Loose>(probe.grpc)
      ? "grpc"
      : undefined;
    if (handler) {
      yield { kind, handler, action: probe[handler], periodSeconds: probe.periodSeconds };
    }
  }
  if (!hooks) return;
  const lifecycle = c.lifecycle;
  if (lifecycle === undefined || lifecycle === null) return;
  if (!isObject<Loose>(lifecycle)) {
    malformed({ message: `lifecycle of container "${container}" is not an object` });
    return;
  }
  for (const kind of HOOKS) {
    const hook = lifecycle[kind];
    if (hook === undefined || hook === null) continue;
    if (!isObject<Loose>(hook)) {
      malformed({
        kind,
        message: `lifecycle.${kind} of container "${container}" is not an object`,
      });
      continue;
    }
    // The hook runner's order: exec first, then httpGet; the API allows only one.
    if (hook.exec !== undefined && hook.exec !== null) continue;
    if (isObject<Loose>(hook.httpGet)) yield { kind, handler: "httpGet", action: hook.httpGet };
  }
}
