/** Loaded programs by kernel id: which maps a running program uses. */
import { BpfError, unwrap } from "./errors.ts";
import { closeFd } from "./fd.ts";
import { libbpfSymbols } from "./library.ts";

/** At most this many map ids are read per program; Lace's use three or four. */
const MAX_MAPS = 64;

/**
 * The ids of the maps a loaded program uses (struct bpf_prog_info's
 * map_ids), e.g. to tell which pinned layout a link's program runs on.
 */
export function programMapIds(progId: number): number[] {
  const bpf = libbpfSymbols();
  const fd = unwrap(`bpf_prog_get_fd_by_id ${progId}`, bpf.bpf_prog_get_fd_by_id(progId));
  try {
    const ids = new Uint32Array(MAX_MAPS);
    // struct bpf_prog_info: nr_map_ids u32 at 52, map_ids u64 (a user pointer) at 56.
    const info = new Uint8Array(256);
    const view = new DataView(info.buffer);
    view.setUint32(52, MAX_MAPS, true);
    view.setBigUint64(56, BigInt(Deno.UnsafePointer.value(Deno.UnsafePointer.of(ids))), true);
    const len = new Uint32Array([info.length]);
    const rc = bpf.bpf_obj_get_info_by_fd(fd, info, new Uint8Array(len.buffer));
    if (rc < 0) throw new BpfError(`bpf_obj_get_info_by_fd program id ${progId}`, rc);
    return Array.from(ids.subarray(0, Math.min(view.getUint32(52, true), MAX_MAPS)));
  } finally {
    closeFd(fd);
  }
}
