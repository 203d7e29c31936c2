/**
 * The images upstream's e2e tests of probes and lifecycle hooks (test/e2e/common/node/
 * container_probe.go, lifecycle_hook.go) run, under the names those tests give them
 * (test/utils/image/manifest.go of the pinned k8s.io/kubernetes), built here without an engine
 * like the node's own images (images.ts) and imported into containerd, so nothing is pulled:
 * - agnhost: the real agnhost at /agnhost (ENTRYPOINT, CMD pause, as upstream's Dockerfile), plus
 *   what the tests run beside it: /bin/sh, /bin/bash, curl (the poststart exec hook) and the few tools
 *   upstream's busybox base gives, and /localhost.crt and /localhost.key (the HTTPS hooks' and
 *   the gRPC TLS probes' server certificate);
 * - busybox: /bin/sh and those tools from this machine (the tests run `sh -c "... sleep ..."`);
 * - pause: the node's own pause.
 */
import { join } from "node:path";
import { run } from "../../lib/os/process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { writeImageArchive } from "./oci_layout.ts";
import { copyPrograms } from "./rootfs.ts";

/** Upstream's names of the images, as manifest.go of k8s.io/kubernetes v1.37.2 gives them. */
export const E2E_IMAGES = {
  agnhost: "registry.k8s.io/e2e-test-images/agnhost:2.66.1",
  busybox: "registry.k8s.io/e2e-test-images/busybox:1.37.0-2",
  pause: "registry.k8s.io/pause:3.10.2",
} as const;

/** The shell and tools the tests' commands and hooks call, from this machine. */
export const SHELL_TOOLS = [
  "/bin/sh",
  // The terminating-readiness specs run `/bin/bash -c` in agnhost (upstream's image has bash).
  "/bin/bash",
  "/bin/cat",
  "/bin/sleep",
  "/bin/rm",
  "/bin/echo",
  "/bin/touch",
  "/bin/ls",
  "/bin/mkdir",
  "/bin/date",
  "/bin/true",
  "/bin/false",
  "/bin/kill",
  "/bin/grep",
  "/usr/bin/env",
  "/usr/bin/head",
  "/usr/bin/tail",
  "/usr/bin/wc",
  "/usr/bin/curl",
];

/** The references manifest.go assigns to `names` (e.g. `Agnhost`), read from its source. */
export function manifestImages(source: string, names: string[]): Record<string, string> {
  const registries: Record<string, string> = {};
  for (const m of source.matchAll(/^\s*(\w+Registry):\s*"([^"]+)",/gm)) registries[m[1]] = m[2];
  const images: Record<string, string> = {};
  for (const name of names) {
    const m = source.match(
      new RegExp(`configs\\[${name}\\] = Config\\{list\\.(\\w+), "([^"]+)", "([^"]+)"\\}`),
    );
    if (!m) throw new Error(`manifest.go has no image config for ${name}`);
    images[name] = `${registries[m[1]]}/${m[2]}:${m[3]}`;
  }
  return images;
}

/** A self-signed certificate for localhost (and 127.0.0.1, ::1) written into root. */
async function writeLocalhostCert(root: string): Promise<void> {
  await run([
    "openssl",
    "req",
    "-x509",
    "-newkey",
    "rsa:2048",
    "-nodes",
    "-days",
    "3650",
    "-subj",
    "/CN=localhost",
    "-addext",
    "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
    "-keyout",
    join(root, "localhost.key"),
    "-out",
    join(root, "localhost.crt"),
  ]);
  await Deno.chmod(join(root, "localhost.key"), 0o644);
}

/** Writes the archives of E2E_IMAGES under dir; returns their paths. */
export async function buildE2eImages(dir: string): Promise<string[]> {
  const tools = await nodeToolPaths();
  const tree = async (name: string) => {
    const path = join(dir, `e2e-${name}-rootfs`);
    await Deno.mkdir(join(path, "tmp"), { recursive: true, mode: 0o1777 });
    return path;
  };
  const archive = (name: string) => join(dir, `e2e-${name}.oci.tar`);

  const agnhost = await tree("agnhost");
  await run(["cp", tools.agnhost, join(agnhost, "agnhost")]);
  await run(["ln", "-s", "agnhost", join(agnhost, "agnhost-2")]);
  await copyPrograms(agnhost, SHELL_TOOLS);
  await writeLocalhostCert(agnhost);
  await writeImageArchive(archive("agnhost"), E2E_IMAGES.agnhost, [agnhost], {
    entrypoint: ["/agnhost"],
    cmd: ["pause"],
  });

  const busybox = await tree("busybox");
  await copyPrograms(busybox, SHELL_TOOLS);
  await writeImageArchive(archive("busybox"), E2E_IMAGES.busybox, [busybox], { cmd: ["sh"] });

  const pause = await tree("pause");
  await run(["cp", tools.pause, join(pause, "pause")]);
  await writeImageArchive(archive("pause"), E2E_IMAGES.pause, [pause], { entrypoint: ["/pause"] });

  for (const name of ["agnhost", "busybox", "pause"]) {
    await Deno.remove(join(dir, `e2e-${name}-rootfs`), { recursive: true });
  }
  return ["agnhost", "busybox", "pause"].map(archive);
}
