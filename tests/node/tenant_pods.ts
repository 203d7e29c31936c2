/**
 * The pods of the real node's isolation tests (tests/node/isolation_node_test.ts), all running
 * the tenant server (tenant_server/main.go), which logs every request it serves:
 * - a victim: readiness over HTTP on 9090, liveness over HTTPS on 9443, both Lace targets;
 * - an attacker: readiness probes and postStart hooks answered with redirects to the SAME host
 *   at the victim's ports (the kubelet follows a redirect while the host stays the same), with
 *   301, 302, 307 and 308, over HTTP and HTTPS, to the victim's HTTP and HTTPS ports;
 * - a pod with a preStop httpGet hook on a port that is no probe port.
 * Every request the attacker provokes carries `stolen-<attacker>` in its query, so a victim's log
 * shows whether one reached it.
 */
import type { V1Container, V1Pod } from "@kubernetes/client-node";
import { IMAGES } from "./images.ts";
import { FAMILY_LABEL } from "./probe_pods.ts";

/** The victim's ports: its readiness probe's (HTTP) and its liveness probe's (HTTPS). */
export const VICTIM_HTTP = 9090;
export const VICTIM_HTTPS = 9443;
export const REDIRECT_CODES = [301, 302, 307, 308] as const;

export interface TenantPodOptions {
  name: string;
  namespace: string;
  node: string;
  network: string;
  /** "ipv6": an IPv6 address only, so the kubelet probes and hooks it over IPv6. */
  family?: "ipv6";
  /** A host number to ask the network plugin for (net_plugin.ts): an address of one's choosing. */
  hostIndex?: number;
}

function metadata(o: TenantPodOptions): V1Pod["metadata"] {
  return {
    name: o.name,
    namespace: o.namespace,
    labels: {
      "lace-test.io/network": o.network,
      ...(o.family ? { [FAMILY_LABEL]: o.family } : {}),
      ...(o.hostIndex === undefined ? {} : { "lace-test.io/host-index": String(o.hostIndex) }),
    },
  };
}

function pod(o: TenantPodOptions, containers: V1Container[], grace = 1): V1Pod {
  return {
    apiVersion: "v1",
    kind: "Pod",
    metadata: metadata(o),
    spec: {
      nodeName: o.node,
      terminationGracePeriodSeconds: grace,
      automountServiceAccountToken: false,
      enableServiceLinks: false,
      containers,
    },
  };
}

function server(name: string, args: { http?: number[]; https?: number[]; exitDelay?: string }) {
  return {
    name,
    image: IMAGES.tenant,
    imagePullPolicy: "Never",
    args: [
      ...(args.http ? [`--http=${args.http.join(",")}`] : []),
      ...(args.https ? [`--https=${args.https.join(",")}`] : []),
      ...(args.exitDelay ? [`--exit-delay=${args.exitDelay}`] : []),
    ],
  } satisfies V1Container;
}

/** The path of a victim's own probes: the only requests its server may log. */
export function victimPaths(name: string): string[] {
  return [`/echo?msg=victim-${name}`, `/echo?msg=victim-${name}-live`];
}

/** A victim: Ready only while the kubelet reaches it on 9090; restarted if not on 9443. */
export function victimPod(o: TenantPodOptions): V1Pod {
  const [ready, live] = victimPaths(o.name);
  return pod(o, [{
    ...server("server", { http: [VICTIM_HTTP], https: [VICTIM_HTTPS] }),
    readinessProbe: {
      httpGet: { path: ready, port: VICTIM_HTTP },
      initialDelaySeconds: 1,
      periodSeconds: 1,
      timeoutSeconds: 1,
    },
    livenessProbe: {
      httpGet: { path: live, port: VICTIM_HTTPS, scheme: "HTTPS" },
      initialDelaySeconds: 2,
      periodSeconds: 2,
      timeoutSeconds: 1,
    },
  }]);
}

/** The marker of every request an attacker provokes. */
export function stolenMarker(attacker: string): string {
  return `stolen-${attacker}`;
}

/**
 * The path that makes the tenant server redirect to the same host at the victim's ports, the
 * n-th request with codes[n % 4] and schemes[n / 4 % 2].
 */
function redirectPath(attacker: string, what: string, codes: readonly number[], schemes: string[]) {
  return `/redirect?codes=${codes.join(",")}&schemes=${schemes.join(",")}` +
    `&http=${VICTIM_HTTP}&https=${VICTIM_HTTPS}&msg=${stolenMarker(attacker)}-${what}`;
}

/** The postStart hooks of an attacker: each code once, every hook and location scheme twice. */
export const ATTACKER_HOOKS = [
  { code: 301, hook: "HTTP", location: "http", port: 8003 },
  { code: 302, hook: "HTTPS", location: "https", port: 8004 },
  { code: 307, hook: "HTTP", location: "https", port: 8005 },
  { code: 308, hook: "HTTPS", location: "http", port: 8006 },
] as const;

/** The readiness probes of an attacker, each walking all four codes and both location schemes. */
export const ATTACKER_PROBES = [
  { container: "server", scheme: "HTTP", port: 8001 },
  { container: "probe-https", scheme: "HTTPS", port: 8002 },
] as const;

/** The attacker's container that serves every probe's and hook's port, and logs each redirect. */
export const ATTACKER_SERVER = "server";

/**
 * An attacker: readiness probes (HTTP, HTTPS) answered with same-host redirects to the victim's
 * ports, walking 301, 302, 307, 308 to http and https; four containers whose postStart httpGet
 * hooks get one such redirect each (ATTACKER_HOOKS). One container, started first, serves every
 * one of those ports, so a hook never finds its port closed because its own container's server
 * is not listening yet (the kubelet runs postStart right after the start). No container listens
 * on or probes the victim's ports, so where a redirect lands is the victim's pod or nowhere.
 */
export function attackerPod(o: TenantPodOptions): V1Pod {
  const ports = [...ATTACKER_PROBES, ...ATTACKER_HOOKS.map((h) => ({ ...h, scheme: h.hook }))];
  const readiness = (p: (typeof ATTACKER_PROBES)[number]) => ({
    httpGet: {
      path: redirectPath(o.name, `readiness-${p.scheme.toLowerCase()}`, REDIRECT_CODES, [
        "http",
        "https",
      ]),
      port: p.port,
      scheme: p.scheme,
    },
    periodSeconds: 1,
    timeoutSeconds: 1,
  });
  const [probeHttp, probeHttps] = ATTACKER_PROBES;
  const first = {
    ...server(ATTACKER_SERVER, {
      http: ports.filter((p) => p.scheme === "HTTP").map((p) => p.port),
      https: ports.filter((p) => p.scheme === "HTTPS").map((p) => p.port),
    }),
    readinessProbe: readiness(probeHttp),
  };
  const second = { ...server(probeHttps.container, {}), readinessProbe: readiness(probeHttps) };
  const hooks = ATTACKER_HOOKS.map((h) => ({
    ...server(`hook-${h.code}`, {}),
    lifecycle: {
      postStart: {
        httpGet: {
          path: redirectPath(o.name, `poststart-${h.code}`, [h.code], [h.location]),
          port: h.port,
          scheme: h.hook,
        },
      },
    },
  }));
  return pod(o, [first, second, ...hooks]);
}

/** The path of a hook pod's preStop hook, as its server logs it. */
export function preStopPath(name: string): string {
  return `/echo?msg=prestop-${name}`;
}

/**
 * A pod whose preStop httpGet hook asks 8090, a port no probe uses (so only the hook makes it a
 * target), and whose server keeps serving 3 s after SIGTERM, so its log shows the order.
 */
export function hookPod(o: TenantPodOptions, withReadiness = true): V1Pod {
  return pod(o, [{
    ...server("server", { http: [8080, 8090], exitDelay: "3s" }),
    ...(withReadiness
      ? {
        readinessProbe: {
          httpGet: { path: `/echo?msg=ready-${o.name}`, port: 8080 },
          periodSeconds: 1,
          timeoutSeconds: 1,
        },
      }
      : {}),
    lifecycle: { preStop: { httpGet: { path: preStopPath(o.name), port: 8090 } } },
  }], 15);
}
