// A rank's work on a frame in bench:ring's hop-work scenario: the CPU kept busy, as a layer
// computing keeps it (a timer would let the rank sleep instead).
export function work(us: number): void {
  if (us <= 0) return;
  const until = process.hrtime.bigint() + BigInt(Math.round(us * 1000));
  while (process.hrtime.bigint() < until);
}
