/**
 * Writes all of a text to a file written synchronously (stdout, stderr):
 * one writeSync() may take only part of it (a pipe that is nearly full), and
 * the rest would be lost.
 */
const encoder = new TextEncoder();

export function writeTextSync(file: { writeSync(p: Uint8Array): number }, text: string): void {
  const bytes = encoder.encode(text);
  for (let off = 0; off < bytes.length;) off += file.writeSync(bytes.subarray(off));
}
