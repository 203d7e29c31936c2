/**
 * Other releases' BPF objects for upgrade tests, built into a temp directory:
 * the release before layouts were versioned (tests/fixtures/bpf_release_n1),
 * the previous release, map layout ABI 1 in abi1/ (tests/fixtures/bpf_release_abi1),
 * today's source with other instructions (LACE_TEST_VARIANT), and a "next
 * layout" release (ABI + 1, a probe value with one more field). Also a node as
 * the release before left it: maps pinned flat beside the links.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { BpfLink, BpfObject, closeFd, openDirectory } from "../../lib/libbpf/mod.ts";
import { encodeInfo, linkPinName, MAP_NAMES, PROGRAMS } from "../../lib/datapath/pins.ts";
import { objectSha256 } from "../../lib/datapath/bpf_object.ts";
import { encodeKey, encodeValue } from "../../lib/datapath/probe_map.ts";
import type { ProbeEntry } from "../../lib/probe/key.ts";
import { BPF_DIR, buildBpfObject } from "./bpf_build.ts";

const RELEASE_N1 = fileURLToPath(new URL("../fixtures/bpf_release_n1", import.meta.url));
const RELEASE_ABI1 = fileURLToPath(new URL("../fixtures/bpf_release_abi1", import.meta.url));

/** The objects of the releases an upgrade test moves between, and their sha256s. */
export class Releases implements AsyncDisposable {
  readonly dir: string;
  private constructor(dir: string) {
    this.dir = dir;
  }

  static async create(): Promise<Releases> {
    return new Releases(await Deno.makeTempDir({ prefix: "lace-releases-" }));
  }

  /** The release before layouts were versioned: ABI 1 pinned flat, no lace_abi_version symbol. */
  unversioned(): Promise<string> {
    return buildBpfObject({
      source: join(RELEASE_N1, "lace.bpf.c"),
      out: join(this.dir, "release-n1.bpf.o"),
    });
  }

  /** The previous release: map layout ABI 1 in abi1/, probe values without hits. */
  previous(): Promise<string> {
    return buildBpfObject({
      source: join(RELEASE_ABI1, "lace.bpf.c"),
      out: join(this.dir, "release-abi1.bpf.o"),
    });
  }

  /** Today's source with other instructions and the same maps. */
  variant(): Promise<string> {
    return buildBpfObject({ out: join(this.dir, "variant.bpf.o"), defines: ["LACE_TEST_VARIANT"] });
  }

  /** A next release that changes the layout: ABI + 1 and one more probe value field at the end. */
  async nextLayout(): Promise<string> {
    const src = join(this.dir, "next");
    await Deno.mkdir(src, { recursive: true });
    const header = await Deno.readTextFile(join(BPF_DIR, "lace.h"));
    const abi = Number(/#define LACE_ABI_VERSION (\d+)/.exec(header)?.[1]);
    const last = "\t__u64 last_hit_ns;\n};\n";
    if (!abi || !header.includes(last)) {
      throw new Error("bpf/lace.h changed shape: update tests/helpers/releases.ts nextLayout()");
    }
    await Deno.writeTextFile(
      join(src, "lace.h"),
      header.replace(`#define LACE_ABI_VERSION ${abi}`, `#define LACE_ABI_VERSION ${abi + 1}`)
        .replace(last, `\t__u64 last_hit_ns;\n\t__u64 next_field; /* the next release's */\n};\n`),
    );
    await Deno.copyFile(join(BPF_DIR, "lace.bpf.c"), join(src, "lace.bpf.c"));
    return buildBpfObject({ source: join(src, "lace.bpf.c"), out: join(this.dir, "next.bpf.o") });
  }

  /**
   * A release whose probe value this agent cannot read: only the mark (4
   * bytes), so its map can be neither copied nor filled by today's codec.
   */
  async narrowValue(): Promise<string> {
    const src = join(this.dir, "narrow");
    await Deno.mkdir(src, { recursive: true });
    // The previous release's source: it reads no value field but the mark.
    const header = await Deno.readTextFile(join(RELEASE_ABI1, "lace.h"));
    const value = /struct lace_probe_value \{[^}]*\};/.exec(header)?.[0];
    if (!value?.includes("__u32 mark;")) {
      throw new Error("bpf/lace.h changed shape: update tests/helpers/releases.ts narrowValue()");
    }
    await Deno.writeTextFile(
      join(src, "lace.h"),
      header.replace(value, "struct lace_probe_value {\n\t__u32 mark;\n};"),
    );
    await Deno.copyFile(join(RELEASE_ABI1, "lace.bpf.c"), join(src, "lace.bpf.c"));
    return buildBpfObject({ source: join(src, "lace.bpf.c"), out: join(this.dir, "narrow.bpf.o") });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await Deno.remove(this.dir, { recursive: true });
  }
}

/** The sha256 of an object file, as the info map records it. */
export async function sha256Of(object: string): Promise<string> {
  return objectSha256(await Deno.readFile(object));
}

/**
 * Leaves a node as the release before layouts were versioned did: `object`'s
 * maps pinned flat under `pinPath`, holding `entries`, its info written, and
 * both programs attached to `cgroup` through pinned links.
 */
export async function installUnversionedRelease(
  pinPath: string,
  cgroup: string,
  object: string,
  entries: ProbeEntry[],
): Promise<void> {
  const bytes = await Deno.readFile(object);
  await Deno.mkdir(pinPath, { recursive: true });
  using obj = BpfObject.openMemory(bytes);
  for (const name of MAP_NAMES) obj.setPinPath(name, join(pinPath, name));
  obj.load();
  const probeMap = obj.map("probe_targets");
  for (const e of entries) {
    // Its own value layout: today's fields, cut or zero-padded to its size.
    const value = new Uint8Array(probeMap.info.valueSize);
    value.set(encodeValue(e.value).subarray(0, value.length));
    probeMap.update(encodeKey(e.key), value);
  }
  obj.map("info").update(new Uint8Array(4), encodeInfo(objectSha256(bytes), 1, Date.now()));
  const fd = openDirectory(cgroup);
  try {
    for (const p of PROGRAMS) {
      using link = BpfLink.create(obj.program(p.section).fd, fd, p.attachType, p.name);
      link.pin(join(pinPath, linkPinName(p.name)));
    }
  } finally {
    closeFd(fd);
  }
}
