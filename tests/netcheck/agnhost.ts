/**
 * A stand-in for agnhost in the simulated cluster, with the two subcommands
 * netcheck uses:
 *
 * - `connect [--timeout=DURATION] HOST:PORT`: one TCP connect, with agnhost's
 *   contract: exit 0 on success; otherwise exit 1 and stderr starting with
 *   UNKNOWN (unparsable address), DNS (resolution failed), TIMEOUT, REFUSED,
 *   or OTHER (any other network error). A zero timeout means no limit.
 * - `netexec --http-port=N --udp-port=-1`: an HTTP server on every address;
 *   `/echo?msg=M` answers M; `/hostname` answers the pod's name (HOSTNAME, as in a pod), after
 *   LACE_SIM_ANSWER_DELAY_MS when set (a slow path for the latency check), or without end with
 *   LACE_SIM_ENDLESS_HOSTNAME=1 (a hostile pod).
 *
 * Run with `deno run --allow-net agnhost.ts …` inside the pod's namespace.
 */
import { splitHostPort } from "../../lib/net/host_port.ts";

function fail(text: string): never {
  Deno.stderr.writeSync(new TextEncoder().encode(text + "\n"));
  Deno.exit(1);
}

/** Parses a Go duration ("5s", "1500ms", "1m30s", "0") into ms; undefined if invalid. */
export function parseGoDuration(text: string): number | undefined {
  if (text === "0") return 0;
  const units: Record<string, number> = {
    ns: 1e-6,
    us: 1e-3,
    "µs": 1e-3,
    ms: 1,
    s: 1000,
    m: 60_000,
    h: 3_600_000,
  };
  const re = /(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/gy;
  let total = 0, consumed = 0;
  for (const m of text.matchAll(re)) {
    total += Number(m[1]) * units[m[2]];
    consumed += m[0].length;
  }
  return consumed === text.length && text !== "" ? total : undefined;
}

const ipv4 = /^\d{1,3}(\.\d{1,3}){3}$/;

async function resolve(host: string): Promise<string> {
  if (host === "" || ipv4.test(host) || host.includes(":")) return host || "0.0.0.0";
  for (const type of ["A", "AAAA"] as const) {
    try {
      const found = await Deno.resolveDns(host, type);
      if (found.length) return found[0];
    } catch {
      // Try the next record type, then report like Go does.
    }
  }
  throw new Error(`lookup ${host}: no such host`);
}

async function connect(args: string[]): Promise<never> {
  let timeoutMs = 0;
  const positionals: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a.startsWith("--timeout")) {
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : args[++i];
      const ms = value === undefined ? undefined : parseGoDuration(value);
      if (ms === undefined) fail(`Error: invalid argument "${value}" for "--timeout" flag`);
      timeoutMs = ms;
    } else if (a.startsWith("-")) fail(`Error: unknown flag: ${a}`);
    else positionals.push(a);
  }
  if (positionals.length !== 1) {
    fail(`Error: accepts 1 arg(s), received ${positionals.length}`);
  }
  const dest = positionals[0];
  let host: string, port: string;
  try {
    [host, port] = splitHostPort(dest);
  } catch (e) {
    fail(`UNKNOWN: ${(e as Error).message}`);
  }
  const portNumber = Number(port);
  if (!/^\d+$/.test(port)) fail(`DNS: lookup tcp/${port}: unknown port`);
  if (portNumber > 65535) fail(`DNS: address ${port}: invalid port`);
  let address: string;
  try {
    address = await resolve(host);
  } catch (e) {
    fail(`DNS: ${(e as Error).message}`);
  }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const attempt = Deno.connect({ hostname: address, port: portNumber, transport: "tcp" });
  const limit = timeoutMs > 0
    ? new Promise<"timeout">((r) => timer = setTimeout(() => r("timeout"), timeoutMs))
    : new Promise<never>(() => {});
  try {
    const result = await Promise.race([attempt, limit]);
    if (result === "timeout") fail("TIMEOUT");
    result.close();
    Deno.exit(0);
  } catch (e) {
    clearTimeout(timer);
    if (e instanceof Deno.errors.ConnectionRefused) fail("REFUSED");
    if (e instanceof Deno.errors.TimedOut) fail("TIMEOUT");
    const reason = (e as Error).message.replace(/\s*\(os error \d+\)$/, "").toLowerCase();
    fail(`OTHER: dial tcp ${dest}: connect: ${reason}`);
  }
}

function netexec(args: string[]): void {
  const flag = args.find((a) => a.startsWith("--http-port="));
  const port = Number(flag?.split("=")[1] ?? 8080);
  const hostname = Deno.env.get("HOSTNAME") ?? "";
  const delayMs = Number(Deno.env.get("LACE_SIM_ANSWER_DELAY_MS") ?? 0);
  const endless = Deno.env.get("LACE_SIM_ENDLESS_HOSTNAME") === "1";
  const chunk = new TextEncoder().encode("a".repeat(64 * 1024));
  Deno.serve({ hostname: "::", port, onListen: () => {} }, async (request) => {
    const url = new URL(request.url);
    if (url.pathname === "/echo") return new Response(url.searchParams.get("msg") ?? "");
    if (url.pathname !== "/hostname") return new Response("NOW: ok\n");
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs));
    // A hostile pod: one line of pod-name characters that never ends (chunked, no length).
    if (endless) return new Response(new ReadableStream({ pull: (c) => c.enqueue(chunk) }));
    return new Response(hostname);
  });
}

if (import.meta.main) {
  const [sub, ...rest] = Deno.args;
  if (sub === "connect") await connect(rest);
  else if (sub === "netexec") netexec(rest);
  else fail(`Error: unknown command "${sub}" for "agnhost"`);
}
