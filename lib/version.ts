/** The build's version, shown by `lace version`, in build info and to doctor. */
import denoJson from "../deno.json" with { type: "json" };
import { ABI_VERSION } from "./probe_map.ts";

export const VERSION: string = denoJson.version;
export const BPF_ABI_VERSION: number = ABI_VERSION;
