// How a benchmark's script ends: main() runs under a time limit (every step of it is bounded;
// should one still hang, the run ends anyway), a failure exits 1, and once main() is done
// nothing left holding the event loop keeps the process for more than 5 s.
export function boundedRun(name: string, main: () => Promise<void>, limitMs: number): void {
  const limit = setTimeout(() => {
    console.error(`${name} did not finish within ${limitMs / 60_000} min`);
    process.exit(1);
  }, limitMs).unref();
  main().then(
    () => {
      clearTimeout(limit);
      setTimeout(() => {
        console.error(`${name}: something still held the event loop 5 s after the end; exiting`);
        process.exit(process.exitCode ?? 0);
      }, 5000).unref();
    },
    (error) => {
      console.error(error);
      process.exit(1);
    },
  );
}
