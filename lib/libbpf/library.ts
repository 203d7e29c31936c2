/**
 * Loads libbpf (and libc) on first use, never at import time, so that
 * commands and tests that never touch BPF do not need the library.
 */
import { getLogger } from "@logtape/logtape";
import { LIBBPF_SYMBOLS, LIBC_SYMBOLS } from "./ffi.ts";

const log = getLogger(["lace", "libbpf"]);

export type Libbpf = Deno.DynamicLibrary<typeof LIBBPF_SYMBOLS>["symbols"];
export type Libc = Deno.DynamicLibrary<typeof LIBC_SYMBOLS>["symbols"];

/** The default soname; `LACE_LIBBPF` overrides it with a name or a path. */
const DEFAULT_LIBBPF = "libbpf.so.1";

let libbpf: Deno.DynamicLibrary<typeof LIBBPF_SYMBOLS> | undefined;
let libc: Deno.DynamicLibrary<typeof LIBC_SYMBOLS> | undefined;
const PRINT_FN = { parameters: ["i32", "pointer", "pointer"], result: "i32" } as const;
// Kept referenced for the life of the process: libbpf holds its pointer.
let _printer: Deno.UnsafeCallback<typeof PRINT_FN> | undefined;

/** The libbpf path in effect: `LACE_LIBBPF`, else `libbpf.so.1`. */
function libbpfPath(): string {
  return Deno.env.get("LACE_LIBBPF") || DEFAULT_LIBBPF;
}

/**
 * Returns libbpf's symbols, opening the library on the first call. A load
 * failure is re-thrown with its cause and says how to install the library.
 */
export function libbpfSymbols(): Libbpf {
  if (libbpf) return libbpf.symbols;
  const path = libbpfPath();
  try {
    libbpf = Deno.dlopen(path, LIBBPF_SYMBOLS);
  } catch (cause) {
    throw new Error(
      `Cannot load libbpf from "${path}": install libbpf1 (apt-get install libbpf1) or set LACE_LIBBPF to its path`,
      { cause },
    );
  }
  routeLibbpfMessages(libbpf.symbols);
  return libbpf.symbols;
}

/** Returns the libc symbols the wrappers need, opening libc on the first call. */
export function libcSymbols(): Libc {
  if (libc) return libc.symbols;
  try {
    libc = Deno.dlopen("libc.so.6", LIBC_SYMBOLS);
  } catch (cause) {
    throw new Error(`Cannot load libc from "libc.so.6"`, { cause });
  }
  return libc.symbols;
}

/**
 * This thread's errno, for a libc call that just failed. Read it as the very next
 * call, and still treat it as a hint: V8 runs on this thread between two FFI calls
 * (a collection, compiling a function) and its own system calls may have set errno
 * since (seen: ENOENT after a non-blocking connect). So a caller decides an outcome
 * from return values and socket state where it can, and uses errno to name a
 * failure, or retries once before it believes an errno that would change a verdict.
 */
export function lastErrno(): number {
  return new Deno.UnsafePointerView(libcSymbols().__errno_location()!).getInt32();
}

/**
 * Sends libbpf's own messages (verifier logs, pinning notes) to Lace's log
 * instead of stderr: warnings at warning level, the rest at debug.
 */
function routeLibbpfMessages(symbols: Libbpf): void {
  const c = libcSymbols();
  const buffer = new Uint8Array(8192);
  const callback = new Deno.UnsafeCallback(
    PRINT_FN,
    (level, format, args) => {
      const n = c.vsnprintf(buffer, BigInt(buffer.length), format, args);
      const text = new TextDecoder().decode(
        buffer.subarray(0, Math.max(0, Math.min(n, buffer.length - 1))),
      )
        .trimEnd();
      // enum libbpf_print_level: 0 warn, 1 info, 2 debug.
      if (level === 0) log.warn("libbpf: {message}", { message: text });
      else log.debug("libbpf: {message}", { message: text });
      return 0;
    },
  );
  _printer = callback;
  symbols.libbpf_set_print(callback.pointer);
}
