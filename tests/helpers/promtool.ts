/**
 * Runs the real `promtool` (Prometheus' own checker) for the monitoring tests: the version
 * tests/promtool/go.mod pins, as scripts/build_k8s_tools.sh caches it ($PROMTOOL names another).
 * `check metrics` lints a scrape's names, units and help; `check rules` and `test rules` load
 * and unit-test alerting rules.
 */
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isExecutable } from "./executable.ts";

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

/** The Prometheus module version tests/promtool/go.mod requires (v0.316.0 is Prometheus 3.16.0). */
export function pinnedPromtoolVersion(): string {
  const goMod = Deno.readTextFileSync(join(REPO, "tests/promtool/go.mod"));
  const version = /^require github\.com\/prometheus\/prometheus (v\S+)$/m.exec(goMod)?.[1];
  if (!version) {
    throw new Error("tests/promtool/go.mod does not require github.com/prometheus/prometheus");
  }
  return version;
}

/** The promtool binary: $PROMTOOL, else the build script's cache (it may not be built). */
export function promtoolPath(): string {
  const env = Deno.env.get("PROMTOOL");
  if (env) return env;
  const cache = Deno.env.get("LACE_TOOLS_CACHE") ??
    join(Deno.env.get("HOME") ?? "/root", ".cache/lace/tools");
  const version = pinnedPromtoolVersion();
  return join(cache, `promtool-${version}`, "promtool");
}

/** Why promtool cannot run here, or undefined when it can. */
export function promtoolMissing(): string | undefined {
  const path = promtoolPath();
  return isExecutable(path)
    ? undefined
    : `"${path}" is not built; run scripts/build_k8s_tools.sh promtool`;
}

export interface PromtoolResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args`, `stdin` on its standard input. */
export async function promtool(args: string[], stdin = ""): Promise<PromtoolResult> {
  const child = new Deno.Command(promtoolPath(), {
    args,
    cwd: REPO,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(stdin));
  await writer.close();
  const out = await child.output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/**
 * What `promtool check metrics` finds wrong with an exposition (one problem a line), or "" when
 * it passes; a failure to run at all throws.
 */
export async function metricsProblems(exposition: string): Promise<string> {
  const result = await promtool(["check", "metrics"], exposition);
  const said = (result.stdout + result.stderr).trim();
  if (result.code === 0) return said;
  if (said === "") throw new Error(`promtool check metrics exited ${result.code} saying nothing`);
  return said;
}

/** The Prometheus Operator's CRDs scripts/build_k8s_tools.sh keeps (ServiceMonitor, …). */
export function operatorCrdsDir(): string {
  const script = Deno.readTextFileSync(join(REPO, "scripts/build_k8s_tools.sh"));
  const version = /^PROMETHEUS_OPERATOR_VERSION=(\S+)$/m.exec(script)?.[1];
  if (!version) throw new Error("scripts/build_k8s_tools.sh has no PROMETHEUS_OPERATOR_VERSION");
  const cache = Deno.env.get("LACE_TOOLS_CACHE") ??
    join(Deno.env.get("HOME") ?? "/root", ".cache/lace/tools");
  return join(cache, `prometheus-operator-crds-${version}`);
}

/** Why the Prometheus Operator's CRDs are not here, or undefined when they are. */
export function operatorCrdsMissing(): string | undefined {
  const dir = operatorCrdsDir();
  try {
    Deno.statSync(join(dir, "monitoring.coreos.com_prometheusrules.yaml"));
    return undefined;
  } catch {
    return `"${dir}" has no CRDs; run scripts/build_k8s_tools.sh prometheus-operator-crds`;
  }
}
