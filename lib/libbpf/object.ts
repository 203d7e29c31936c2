/**
 * An owned libbpf `struct bpf_object`: open from bytes, pin maps, load, find
 * programs and maps. Closing it closes its program and map fds; pins stay.
 */
import { BpfError, unwrap } from "./errors.ts";
import { cString } from "./ffi.ts";
import { libbpfSymbols } from "./library.ts";
import { BpfMap, type MapInfo } from "./map.ts";
import { objectInfo } from "./fd.ts";

/** A loaded program of an object; its fd belongs to the object. */
export interface BpfProgram {
  readonly name: string;
  readonly fd: number;
  /** The kernel's id and tag of the loaded program. */
  info(): { id: number; tag: string };
}

/** What an object defines for one map; a pinned map must match it to be reused. */
export type MapDefinition = Pick<MapInfo, "type" | "keySize" | "valueSize" | "maxEntries">;

export class BpfObject implements Disposable {
  #handle: Deno.PointerObject | null;
  // libbpf keeps pointing into the ELF bytes while the object is open.
  #bytes: Uint8Array | null;
  #loaded = false;

  private constructor(handle: Deno.PointerObject, bytes: Uint8Array) {
    this.#handle = handle;
    this.#bytes = bytes;
  }

  /** Parses an ELF BPF object from memory; nothing reaches the kernel until load(). */
  static openMemory(bytes: Uint8Array): BpfObject {
    const copy = new Uint8Array(new ArrayBuffer(bytes.length));
    copy.set(bytes);
    const handle = libbpfSymbols().bpf_object__open_mem(copy, BigInt(copy.length), null);
    if (handle === null) {
      throw new Error(
        "bpf_object__open_mem failed: the BPF object is not a valid ELF BPF object; rebuild it with `deno task bpf`",
      );
    }
    return new BpfObject(handle, copy);
  }

  get #ptr(): Deno.PointerObject {
    if (this.#handle === null) throw new Error("BPF object is closed");
    return this.#handle;
  }

  #mapHandle(name: string): Deno.PointerObject {
    const map = libbpfSymbols().bpf_object__find_map_by_name(this.#ptr, cString(name));
    if (map === null) throw new Error(`BPF object has no map "${name}"`);
    return map;
  }

  /**
   * Pins a map at `path` when the object loads, reusing an existing compatible
   * pin there: this is how entries survive a restart.
   */
  setPinPath(mapName: string, path: string): void {
    if (this.#loaded) throw new Error(`Pin path of map "${mapName}" must be set before load`);
    unwrap(
      `bpf_map__set_pin_path "${mapName}" "${path}"`,
      libbpfSymbols().bpf_map__set_pin_path(this.#mapHandle(mapName), cString(path)),
    );
  }

  /** A map's definition in the object (type, key and value size, capacity), before load. */
  mapDefinition(name: string): MapDefinition {
    const map = this.#mapHandle(name);
    const bpf = libbpfSymbols();
    return {
      type: bpf.bpf_map__type(map),
      keySize: bpf.bpf_map__key_size(map),
      valueSize: bpf.bpf_map__value_size(map),
      maxEntries: bpf.bpf_map__max_entries(map),
    };
  }

  /** Creates (or reuses pinned) maps and loads every program into the kernel. */
  load(): void {
    const rc = libbpfSymbols().bpf_object__load(this.#ptr);
    if (rc < 0) throw new BpfError("bpf_object__load", rc);
    this.#loaded = true;
  }

  /** A map of the loaded object; its fd stays owned by the object. */
  map(name: string): BpfMap {
    const fd = unwrap(`bpf_map__fd "${name}"`, libbpfSymbols().bpf_map__fd(this.#mapHandle(name)));
    return BpfMap.borrow(fd, name);
  }

  /** Whether the object defines a map of this name (older releases lack newer maps). */
  hasMap(name: string): boolean {
    return libbpfSymbols().bpf_object__find_map_by_name(this.#ptr, cString(name)) !== null;
  }

  /** A program of the loaded object, by its C function name. */
  program(name: string): BpfProgram {
    const prog = libbpfSymbols().bpf_object__find_program_by_name(this.#ptr, cString(name));
    if (prog === null) throw new Error(`BPF object has no program "${name}"`);
    const fd = unwrap(`bpf_program__fd "${name}"`, libbpfSymbols().bpf_program__fd(prog));
    return {
      name,
      fd,
      info: () => {
        // struct bpf_prog_info: type u32, id u32, tag u8[8], ...
        const view = objectInfo(fd, 256, `program "${name}"`);
        const tag = Array.from(
          new Uint8Array(view.buffer, 8, 8),
          (b) => b.toString(16).padStart(2, "0"),
        )
          .join("");
        return { id: view.getUint32(4, true), tag };
      },
    };
  }

  /** Closes the object and its fds; pinned maps and links stay. Safe to call twice. */
  close(): void {
    if (this.#handle === null) return;
    libbpfSymbols().bpf_object__close(this.#handle);
    this.#handle = null;
    this.#bytes = null;
  }

  [Symbol.dispose](): void {
    this.close();
  }
}
