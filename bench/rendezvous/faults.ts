// Page faults and main-thread CPU time from /proc: fresh buffers per tensor show up as minor faults,
// and wall minus main-thread CPU is real waiting (V8's "(idle)" also counts native poll-phase work).
import * as fs from 'node:fs';

/** minflt (field 10 of /proc/self/stat), or NaN where /proc is not there. */
export function minorFaults(): number {
  try {
    const stat = fs.readFileSync('/proc/self/stat', 'latin1');
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[7]);
  } catch {
    return NaN;
  }
}

/** CPU time of the calling (main) thread in ms, from /proc/thread-self/stat (10 ms ticks), or NaN. */
export function mainThreadCpuMs(): number {
  try {
    const stat = fs.readFileSync('/proc/thread-self/stat', 'latin1');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10; // utime + stime, at USER_HZ 100
  } catch {
    return NaN;
  }
}
