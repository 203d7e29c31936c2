/**
 * The node's images, built here without a container engine (OCI archives from
 * ./oci_layout.ts) and imported into containerd's k8s.io namespace:
 * - pause: the kubernetes module's build/pause C source, built static by build_k8s_tools.sh;
 * - agnhost: the real k8s.io/kubernetes/test/images/agnhost, static, at /agnhost as upstream,
 *   and this machine's curl with its libraries (upstream's image installs curl too; netcheck's
 *   latency check runs it);
 * - iperf3: this machine's Debian iperf3 and the libraries it loads (not an mmdebstrap rootfs:
 *   that downloads a whole base system on every fresh machine);
 * - tenant: tests/node/tenant_server (Go, standard library only), built static here: a server
 *   on many HTTP and HTTPS ports that logs every connection and request, and redirects;
 * - lace: NOT the compiled binary (deno compile needs denort, which cannot be had here) but
 *   the same contract as deploy/Dockerfile: /usr/local/bin/lace runs the agent, the CNI plugin
 *   and every command, here as a launcher of the Deno runtime from npm on the checked-out
 *   source with its cached npm dependencies, plus libbpf and /bin/sh for the init container.
 */
import { join } from "node:path";
import { run } from "../../lib/os/process.ts";
import { nodeToolPaths } from "../kube/tools.ts";
import { writeImageArchive } from "./oci_layout.ts";
import { copyPrograms } from "./rootfs.ts";
import { buildBpfObject } from "../helpers/bpf_build.ts";

const repoRoot = new URL("../../", import.meta.url).pathname;

/** Image references as the pods and containerd's config name them. */
export const IMAGES = {
  pause: "lace.test/pause:1",
  agnhost: "lace.test/agnhost:1",
  iperf3: "lace.test/iperf3:1",
  tenant: "lace.test/tenant:1",
  lace: "lace.test/lace:dev",
} as const;

/**
 * Another release of the lace image for a chart upgrade to a different BPF object: the same
 * layer as IMAGES.lace plus one holding today's source built with other instructions
 * (LACE_TEST_VARIANT, as tests/helpers/releases.ts variant()) in place of bpf/lace.bpf.o.
 */
export const LACE_VARIANT_IMAGE = "lace.test/lace:variant";

/**
 * Where the lace image keeps Deno, the source and the npm cache. The launcher copied to the
 * node's CNI bin directory by the chart's init container refers to these paths, so the node
 * provides them too (tests/node/namespaces.ts mounts the same tree there).
 */
export const LACE_IMAGE_HOME = "/opt/lace";

/** The launcher: what /usr/local/bin/lace is in the release image, the compiled binary. */
export function laceLauncher(home = LACE_IMAGE_HOME): string {
  return [
    "#!/bin/sh",
    "# Lace from source on the Deno runtime (tests/node/images.ts); the release image has the",
    "# compiled binary here instead.",
    `DENO_DIR=${home}/deno-dir DENO_NO_UPDATE_CHECK=1 exec ${home}/deno run --allow-all \\`,
    `  --cached-only --no-prompt --quiet ${home}/src/main.ts "$@"`,
    "",
  ].join("\n");
}

/** Deno's cache of this process (npm packages among it), which the launcher's DENO_DIR holds. */
export function denoDir(): string {
  return Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME") ?? "/root"}/.cache/deno`;
}

/** The tree of the lace image (also mounted on the node at LACE_IMAGE_HOME). */
export async function writeLaceTree(root: string): Promise<void> {
  const home = join(root, LACE_IMAGE_HOME);
  await Deno.mkdir(join(home, "src", "bpf"), { recursive: true });
  await Deno.mkdir(join(home, "deno-dir"), { recursive: true });
  await Deno.mkdir(join(root, "usr/local/bin"), { recursive: true });
  await Deno.mkdir(join(root, "tmp"), { recursive: true });
  const deno = Deno.execPath();
  await copyPrograms(
    root,
    [
      "/bin/sh",
      "/bin/cp",
      "/bin/chmod",
      "/bin/mv",
      "/bin/cat",
      "/usr/lib/x86_64-linux-gnu/libbpf.so.1",
    ],
    { [deno]: `${LACE_IMAGE_HOME}/deno` },
  );
  for (const entry of ["main.ts", "deno.json", "deno.lock", "lib"]) {
    await run(["cp", "-r", join(repoRoot, entry), join(home, "src", entry)]);
  }
  await run(["cp", join(repoRoot, "bpf/lace.bpf.o"), join(home, "src/bpf/lace.bpf.o")]);
  await run(["cp", "-r", join(denoDir(), "npm"), join(home, "deno-dir", "npm")]);
  await Deno.writeTextFile(join(root, "usr/local/bin/lace"), laceLauncher(), { mode: 0o755 });
}

/**
 * Writes the archive of LACE_VARIANT_IMAGE at `archive`, over the lace image's tree `laceTree`;
 * returns the variant object's path (kept beside the archive).
 */
export async function buildLaceVariantImage(laceTree: string, archive: string): Promise<string> {
  const layer = `${archive}-layer`;
  const bpf = join(layer, LACE_IMAGE_HOME, "src", "bpf");
  await Deno.mkdir(bpf, { recursive: true });
  const object = await buildBpfObject({
    out: join(bpf, "lace.bpf.o"),
    defines: ["LACE_TEST_VARIANT"],
  });
  await writeImageArchive(archive, LACE_VARIANT_IMAGE, [laceTree, layer], {
    entrypoint: ["/usr/local/bin/lace"],
    cmd: ["agent"],
  });
  return object;
}

/**
 * Builds tests/node/tenant_server static at `out` with the Go toolchain that built the node's
 * tools (Go's build cache makes a rebuild take well under a second).
 */
export async function buildTenantServer(out: string): Promise<void> {
  const source = new URL("./tenant_server/main.go", import.meta.url).pathname;
  // As scripts/build_k8s_tools.sh: Go on PATH, else where its installers put it.
  const goBinary = await Deno.stat("/usr/local/go/bin/go").then(() => "/usr/local/go/bin/go")
    .catch(() => "go");
  const go = await new Deno.Command(goBinary, {
    args: ["build", "-trimpath", "-ldflags=-s -w", "-o", out, source],
    env: { CGO_ENABLED: "0", GOFLAGS: "-buildvcs=false" },
    stdout: "piped",
    stderr: "piped",
  }).output().catch((error) => {
    throw new Error(`Cannot run go to build the tenant server (install Go 1.26): ${error}`, {
      cause: error,
    });
  });
  if (!go.success) {
    throw new Error(`go build ${source} failed: ${new TextDecoder().decode(go.stderr)}`);
  }
}

/** The archives of the node's images, written under dir; returns name → archive path. */
export async function buildImages(dir: string): Promise<Record<keyof typeof IMAGES, string>> {
  const tools = await nodeToolPaths();
  const archive = (name: keyof typeof IMAGES) => join(dir, `${name}.oci.tar`);
  const tree = async (name: string) => {
    const path = join(dir, `${name}-rootfs`);
    await Deno.mkdir(path, { recursive: true });
    return path;
  };

  const pause = await tree("pause");
  await run(["cp", tools.pause, join(pause, "pause")]);
  await writeImageArchive(archive("pause"), IMAGES.pause, [pause], { entrypoint: ["/pause"] });

  const agnhost = await tree("agnhost");
  await run(["cp", tools.agnhost, join(agnhost, "agnhost")]);
  await copyPrograms(agnhost, ["/usr/bin/curl"]);
  await writeImageArchive(archive("agnhost"), IMAGES.agnhost, [agnhost], {
    entrypoint: ["/agnhost"],
  });

  const iperf3 = await tree("iperf3");
  await copyPrograms(iperf3, ["/usr/bin/iperf3"]);
  await Deno.mkdir(join(iperf3, "tmp"), { recursive: true });
  await writeImageArchive(archive("iperf3"), IMAGES.iperf3, [iperf3], {
    entrypoint: ["/usr/bin/iperf3"],
    cmd: ["--server"],
  });

  const tenant = await tree("tenant");
  await buildTenantServer(join(tenant, "tenant"));
  await writeImageArchive(archive("tenant"), IMAGES.tenant, [tenant], {
    entrypoint: ["/tenant"],
  });

  const lace = await tree("lace");
  await writeLaceTree(lace);
  await writeImageArchive(archive("lace"), IMAGES.lace, [lace], {
    entrypoint: ["/usr/local/bin/lace"],
    cmd: ["agent"],
  });
  for (const name of ["pause", "agnhost", "iperf3", "tenant"]) {
    await Deno.remove(join(dir, `${name}-rootfs`), { recursive: true });
  }
  return {
    pause: archive("pause"),
    agnhost: archive("agnhost"),
    iperf3: archive("iperf3"),
    tenant: archive("tenant"),
    lace: archive("lace"),
  };
}
