/** The build's version, shown by `lace version`, in build info and to doctor. */
import denoJson from "../deno.json" with { type: "json" };

export const VERSION: string = denoJson.version;
