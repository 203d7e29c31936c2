/**
 * Container images without a container engine: an OCI image layout (oci-layout, index.json,
 * blobs/sha256/…) written from directories, one uncompressed tar layer per directory, and packed
 * as the tar archive that `ctr images import` reads. The JSON documents are pure functions; the
 * I/O is tar and sha256sum, so a 100 MB layer is never held in memory.
 */
import { join } from "node:path";
import { run } from "../../lib/os/process.ts";

/** The parts of an OCI image config the node's images set (image-spec "config.md"). */
export interface ImageConfig {
  entrypoint?: string[];
  cmd?: string[];
  env?: string[];
  workingDir?: string;
  user?: string;
}

/** A content descriptor (image-spec "descriptor.md"). */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string };
}

export const MEDIA = {
  manifest: "application/vnd.oci.image.manifest.v1+json",
  config: "application/vnd.oci.image.config.v1+json",
  layer: "application/vnd.oci.image.layer.v1.tar",
  index: "application/vnd.oci.image.index.v1+json",
} as const;

const PLATFORM = { architecture: "amd64", os: "linux" };

/** The image config JSON for layers whose uncompressed digests are diffIds. */
export function imageConfigJson(config: ImageConfig, diffIds: string[]): string {
  return JSON.stringify({
    created: "1970-01-01T00:00:00Z",
    ...PLATFORM,
    config: {
      ...(config.entrypoint ? { Entrypoint: config.entrypoint } : {}),
      ...(config.cmd ? { Cmd: config.cmd } : {}),
      Env: config.env ?? ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],
      ...(config.workingDir ? { WorkingDir: config.workingDir } : {}),
      ...(config.user ? { User: config.user } : {}),
    },
    rootfs: { type: "layers", diff_ids: diffIds },
  });
}

/** The manifest JSON naming a config and its layers (uncompressed, so digest = diff id). */
export function manifestJson(config: Descriptor, layers: Descriptor[]): string {
  return JSON.stringify({ schemaVersion: 2, mediaType: MEDIA.manifest, config, layers });
}

/**
 * The index JSON of a layout holding one image. containerd names the imported image from
 * io.containerd.image.name; org.opencontainers.image.ref.name is the tag, as the spec has it.
 */
export function indexJson(manifest: Descriptor, name: string): string {
  const tag = name.slice(name.lastIndexOf(":") + 1);
  return JSON.stringify({
    schemaVersion: 2,
    mediaType: MEDIA.index,
    manifests: [{
      ...manifest,
      platform: PLATFORM,
      annotations: {
        "io.containerd.image.name": name,
        "org.opencontainers.image.ref.name": tag,
      },
    }],
  });
}

async function sha256File(path: string): Promise<string> {
  const out = await run(["sha256sum", path]);
  return `sha256:${out.split(" ")[0]}`;
}

/** Moves or writes a blob into the layout under its digest and returns its descriptor. */
async function addBlobFile(layout: string, file: string, mediaType: string): Promise<Descriptor> {
  const digest = await sha256File(file);
  const size = (await Deno.stat(file)).size;
  await Deno.rename(file, join(layout, "blobs", "sha256", digest.slice("sha256:".length)));
  return { mediaType, digest, size };
}

async function addBlobText(layout: string, text: string, mediaType: string): Promise<Descriptor> {
  const file = join(layout, `.blob-${crypto.randomUUID()}`);
  await Deno.writeTextFile(file, text);
  return await addBlobFile(layout, file, mediaType);
}

/**
 * Writes the OCI archive of one image at `archive`: each directory of `layerDirs` becomes a
 * layer (owners numeric root, times zero, names sorted, so the same tree gives the same digest),
 * in order, lowest first. Returns the manifest's digest.
 */
export async function writeImageArchive(
  archive: string,
  name: string,
  layerDirs: string[],
  config: ImageConfig,
): Promise<string> {
  const layout = await Deno.makeTempDir({ prefix: "lace-oci-", dir: join(archive, "..") });
  try {
    await Deno.mkdir(join(layout, "blobs", "sha256"), { recursive: true });
    const layers: Descriptor[] = [];
    for (const dir of layerDirs) {
      const tar = join(layout, `.layer-${layers.length}.tar`);
      await run([
        "tar",
        "--create",
        "--file",
        tar,
        "--directory",
        dir,
        "--sort=name",
        "--numeric-owner",
        "--owner=0",
        "--group=0",
        "--mtime=@0",
        "--format=posix",
        "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime",
        ".",
      ]);
      layers.push(await addBlobFile(layout, tar, MEDIA.layer));
    }
    const configBlob = await addBlobText(
      layout,
      imageConfigJson(config, layers.map((layer) => layer.digest)),
      MEDIA.config,
    );
    const manifest = await addBlobText(layout, manifestJson(configBlob, layers), MEDIA.manifest);
    await Deno.writeTextFile(join(layout, "oci-layout"), '{"imageLayoutVersion":"1.0.0"}');
    await Deno.writeTextFile(join(layout, "index.json"), indexJson(manifest, name));
    const partial = `${archive}.partial`;
    await run(["tar", "--create", "--file", partial, "--directory", layout, "."]);
    await Deno.rename(partial, archive);
    return manifest.digest;
  } finally {
    await Deno.remove(layout, { recursive: true }).catch(() => {});
  }
}
