/**
 * Runs the real `helm` against deploy/helm/lace for the chart's tests (tests/chart*_test.ts):
 * finds the binary that scripts/install_helm.sh builds (or one on PATH), renders the chart,
 * parses the manifests and finds the agent's pod spec, container and mounts in them.
 */
import assert from "node:assert/strict";
import { parseAllDocuments } from "yaml";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { isExecutable } from "./executable.ts";
import { skipIf, skipName } from "./skip.ts";

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");
export const CHART = join(REPO, "deploy/helm/lace");
export const HELM_VERSION = "v3.22.0";
/** Kubernetes version to render for: the chart needs ≥ 1.30 (ValidatingAdmissionPolicy v1). */
const KUBE_VERSION = "1.31.0";

// deno-lint-ignore no-explicit-any
export type Manifest = Record<string, any>;

/** The helm binary: $HELM, the install_helm.sh cache, then PATH; undefined when none exists. */
export function findHelm(): string | undefined {
  const env = Deno.env.get("HELM");
  if (env && isExecutable(env)) return env;
  const cache = Deno.env.get("LACE_TOOLS_CACHE") ??
    join(Deno.env.get("HOME") ?? "/", ".cache/lace/tools");
  const cached = join(cache, `helm-${HELM_VERSION}`, "helm");
  if (isExecutable(cached)) return cached;
  for (const dir of (Deno.env.get("PATH") ?? "").split(":")) {
    if (dir && isExecutable(join(dir, "helm"))) return join(dir, "helm");
  }
  return undefined;
}

export interface HelmResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs helm with the given arguments and returns its exit code and output. */
export async function helm(binary: string, args: string[]): Promise<HelmResult> {
  const out = await new Deno.Command(binary, {
    args,
    cwd: REPO,
    stdout: "piped",
    stderr: "piped",
    // helm's own cache and config stay out of the user's home.
    env: {
      HELM_CACHE_HOME: "/tmp/lace-helm-test/cache",
      HELM_CONFIG_HOME: "/tmp/lace-helm-test/config",
    },
  }).output();
  const decoder = new TextDecoder();
  return { code: out.code, stdout: decoder.decode(out.stdout), stderr: decoder.decode(out.stderr) };
}

/** The release rendered: its name and namespace (lace in lace-system unless given). */
export interface Release {
  name?: string;
  namespace?: string;
}

/** `helm template` arguments for --set style overrides (`key=value`, `key:=json` for --set-json). */
export function templateArgs(overrides: string[] = [], release: Release = {}): string[] {
  const args = [
    "template",
    release.name ?? "lace",
    CHART,
    "--namespace",
    release.namespace ?? "lace-system",
    "--kube-version",
    KUBE_VERSION,
  ];
  for (const o of overrides) {
    const json = o.indexOf(":=");
    if (json > 0) args.push("--set-json", `${o.slice(0, json)}=${o.slice(json + 2)}`);
    else args.push("--set", o);
  }
  return args;
}

/** Renders the chart and returns its manifests; throws with helm's message when it refuses. */
export async function render(
  binary: string,
  overrides: string[] = [],
  release: Release = {},
): Promise<Manifest[]> {
  return parseManifests(await renderText(binary, overrides, release));
}

/** Renders the chart and returns helm's output; throws with helm's message when it refuses. */
export async function renderText(
  binary: string,
  overrides: string[] = [],
  release: Release = {},
): Promise<string> {
  const result = await helm(binary, templateArgs(overrides, release));
  if (result.code !== 0) {
    throw new Error(`helm template ${overrides.join(" ")} failed: ${result.stderr.trim()}`);
  }
  return result.stdout;
}

/** The objects of helm's output (multi-document YAML). */
export function parseManifests(text: string): Manifest[] {
  const docs = parseAllDocuments(text);
  if (!Array.isArray(docs)) throw new Error("helm template printed no YAML documents");
  const manifests: Manifest[] = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) {
      throw new Error(`Rendered YAML does not parse: ${doc.errors[0].message}`);
    }
    const value = doc.toJS();
    if (value) manifests.push(value);
  }
  return manifests;
}

/** The one manifest of a kind (and name, when given); throws when there is not exactly one. */
export function only(manifests: Manifest[], kind: string, name?: string): Manifest {
  const found = manifests.filter((m) =>
    m.kind === kind && (name === undefined || m.metadata?.name === name)
  );
  if (found.length !== 1) {
    throw new Error(`Expected one ${kind}${name ? ` "${name}"` : ""}, found ${found.length}`);
  }
  return found[0];
}

/** The value of an environment variable of a container, or its valueFrom, or undefined. */
export function envOf(container: Manifest, name: string): Manifest | string | undefined {
  const entry = (container.env ?? []).find((e: Manifest) => e.name === name);
  return entry?.value ?? entry?.valueFrom;
}

/** The helm binary, when one is found. */
export const HELM = findHelm();
export const noHelm = HELM === undefined;
/** Why helm tests cannot run here, or undefined. */
export const HELM_MISSING = noHelm ? "helm not found; run scripts/install_helm.sh" : undefined;
/** A test that needs helm: skipped, and named so, without it (a failure as root, helpers/skip.ts). */
export const helmTest = (name: string, fn: (helm: string) => Promise<void>) =>
  Deno.test({
    name: skipName(name, HELM_MISSING),
    ignore: skipIf(HELM_MISSING),
    fn: () => fn(HELM!),
  });

/** The DaemonSet's pod spec. */
export function podSpec(manifests: Manifest[]): Manifest {
  return only(manifests, "DaemonSet").spec.template.spec;
}

/** The agent container of the DaemonSet. */
export function agent(manifests: Manifest[]): Manifest {
  const found = podSpec(manifests).containers.filter((c: Manifest) => c.name === "agent");
  assert.equal(found.length, 1, "one agent container");
  return found[0];
}

/** Where a volume is mounted in the agent and which host path backs it. */
export function mountOf(manifests: Manifest[], mountPath: string) {
  const mount = agent(manifests).volumeMounts.find((m: Manifest) => m.mountPath === mountPath);
  assert.ok(mount, `agent mounts ${mountPath}`);
  const volume = podSpec(manifests).volumes.find((v: Manifest) => v.name === mount.name);
  return { mount, hostPath: volume?.hostPath?.path as string | undefined };
}

/** helm's message refusing `overrides` (fails when helm renders them). */
export async function refusal(helmBin: string, overrides: string[]): Promise<string> {
  const result = await helm(helmBin, templateArgs(overrides));
  assert.notEqual(result.code, 0, `helm should refuse ${overrides.join(" ")}`);
  return result.stderr;
}
