/**
 * Which map layout (ABI version) a compiled BPF object was built for, read
 * from its ELF symbol table without loading anything: the object's
 * `lace_abi_version` global, or 1 for objects of the release before layouts
 * were versioned (they have no such symbol).
 */

/** The ABI version of objects that predate the `lace_abi_version` symbol. */
export const UNVERSIONED_ABI = 1;
const SYMBOL = "lace_abi_version";
const SHT_SYMTAB = 2;
const SHT_NOBITS = 8;

/** Reads `lace_abi_version` from an ELF64 little-endian BPF object; throws on a malformed file. */
export function objectAbiVersion(bytes: Uint8Array): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (
    bytes.length < 64 || view.getUint32(0, false) !== 0x7f454c46 || bytes[4] !== 2 ||
    bytes[5] !== 1
  ) {
    throw new TypeError("BPF object is not a 64-bit little-endian ELF file");
  }
  const shoff = Number(view.getBigUint64(0x28, true));
  const shentsize = view.getUint16(0x3a, true);
  const shnum = view.getUint16(0x3c, true);
  const section = (i: number) => {
    const at = shoff + i * shentsize;
    if (i >= shnum || at + 64 > bytes.length) {
      throw new RangeError(`BPF object has no section ${i}`);
    }
    return {
      type: view.getUint32(at + 4, true),
      offset: Number(view.getBigUint64(at + 24, true)),
      size: Number(view.getBigUint64(at + 32, true)),
      link: view.getUint32(at + 40, true),
      entsize: Number(view.getBigUint64(at + 56, true)),
    };
  };
  const decoder = new TextDecoder();
  for (let i = 0; i < shnum; i++) {
    const symtab = section(i);
    if (symtab.type !== SHT_SYMTAB || symtab.entsize < 24) continue;
    const strtab = section(symtab.link);
    for (let at = symtab.offset; at + 24 <= symtab.offset + symtab.size; at += symtab.entsize) {
      const nameAt = strtab.offset + view.getUint32(at, true);
      const end = bytes.indexOf(0, nameAt);
      if (decoder.decode(bytes.subarray(nameAt, end < 0 ? nameAt : end)) !== SYMBOL) continue;
      const holder = section(view.getUint16(at + 6, true));
      const value = Number(view.getBigUint64(at + 8, true));
      if (Number(view.getBigUint64(at + 16, true)) !== 4) {
        throw new TypeError(`BPF object's ${SYMBOL} is not a 4-byte value`);
      }
      if (holder.type === SHT_NOBITS) return 0;
      return view.getUint32(holder.offset + value, true);
    }
  }
  return UNVERSIONED_ABI;
}
