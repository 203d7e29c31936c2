/**
 * libbpf, and the few libc calls around it, through Deno FFI: the one module the
 * rest of Lace imports from this folder (its files are its own business, as
 * cilium/ebpf keeps its internals under `internal/`). ffi.ts is the symbol
 * table only; the libraries load on first use, never at import time, and every
 * failing call becomes a BpfError that names its errno.
 */
export { BpfError, Errno, errnoName, isErrno, unwrap } from "./errors.ts";
export {
  BPF_CGROUP_INET4_CONNECT,
  BPF_CGROUP_INET6_CONNECT,
  cString,
  LOCK_EX,
  LOCK_NB,
  LOCK_SH,
} from "./ffi.ts";
export { lastErrno, type Libbpf, libbpfSymbols, type Libc, libcSymbols } from "./library.ts";
export { closeFd, openDirectory } from "./fd.ts";
export { monotonicNowNs } from "./clock.ts";
export { BpfLink, type LinkInfo } from "./link.ts";
export { BpfMap, type MapInfo } from "./map.ts";
export {
  type BatchLookup,
  kernelBatchLookup,
  type RawEntries,
  type ReadMode,
} from "./map_entries.ts";
export { BpfObject, type BpfProgram, type MapDefinition } from "./object.ts";
export { programMapIds } from "./program.ts";
export { RingBufferReader } from "./ring_buffer.ts";
