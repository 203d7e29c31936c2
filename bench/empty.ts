/** The CNI figure's baseline: a `deno run` that does nothing. */
