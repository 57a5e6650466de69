// Sizes as the command line writes them ("64k", "1m") and as tables label them ("64 KiB"): the
// syntax of `rvma perf --sizes` and of the benchmarks' --sizes.

const UNITS: Record<string, number> = { '': 1, k: 1 << 10, m: 1 << 20, g: 1 << 30 };

/** "8", "64k", "1m", "1G": bytes (powers of 1024). Throws an Error naming what it cannot read. */
export function parseSize(text: string): number {
  const m = /^(\d+)([kmg]?)$/i.exec(text.trim());
  const bytes = m ? Number(m[1]) * UNITS[m[2].toLowerCase()] : NaN;
  if (!Number.isSafeInteger(bytes) || bytes < 1 || bytes > 1 << 30) throw new Error(`size "${text}": a number of bytes from 1 to 1g, with k, m or g for KiB, MiB or GiB`);
  return bytes;
}

/** A comma-separated list of sizes, each once, in the order given. */
export function parseSizes(text: string): number[] {
  return [...new Set(text.split(',').map(parseSize))];
}

/** "16 KiB", "1 MiB", "100 B": whole KiB and MiB by their unit. */
export function sizeLabel(bytes: number): string {
  if (bytes >= 1 << 20 && bytes % (1 << 20) === 0) return `${bytes / (1 << 20)} MiB`;
  if (bytes >= 1 << 10 && bytes % (1 << 10) === 0) return `${bytes / (1 << 10)} KiB`;
  return `${bytes} B`;
}
